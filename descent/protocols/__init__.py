"""Engine protocols, both ways: ``descent engine GAME`` speaks UCI (Fairy-Stockfish's UCI variant
dialect for xiangqi and breakthrough) or GTP on stdin/stdout (``uci``, ``gtp``), and an outside UCI or
GTP engine can be an agent (``uci:PATH,...`` / ``gtp:PATH,...``, ``outside``). ``notation``
translates moves and positions between the game's notation and the protocol's; ``thinking`` runs a
search in a thread that ``stop`` can end. ``variants.ini`` defines the breakthrough sizes other
than 8x8 for Fairy-Stockfish (its ``VariantPath`` option)."""
from __future__ import annotations

from importlib import resources

__all__ = ["variants_ini"]


def variants_ini() -> str:
    """The path of the shipped ``variants.ini`` (package data)."""
    return str(resources.files(__name__) / "variants.ini")
