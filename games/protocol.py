"""The game protocol: how to write a game in Python that descent trains, ranks and plays.

Subclass ``Game`` (or write a class with the same methods), then name it by ``module:Class`` (e.g.
``descent match 'examples.connect_four:ConnectFour' ...``, with parameters
``'examples.connect_four:ConnectFour(rows=5)'``) or register it under the entry point group
``descent.games`` of your package. ``descent check-game SPEC`` runs the conformance suite on it.

An object of the class is one position of the game and the player to move; ``Game(**params)`` is
the initial position. The compiled adapter (``games.python_game.PythonGameState``) wraps it in the
``State`` contract that every search, self-play and match is written against, so a Python game runs
through the same code as the compiled engines (slower: each node calls Python).

**Facts** (class attributes, or instance attributes set in ``__init__`` when they depend on the
parameters):

* ``num_actions``: the size of the action space; actions are integers in ``[0, num_actions)``;
* ``max_plies``: the ply cap. The adapter ends a game that reaches it in a draw, so the game itself
  need not count plies;
* ``planes_shape``: ``(H, W, C)`` of ``encode()``, float32, channels last;
* ``players``: the two players' names, first player first (default ``("first", "second")``);
* ``symmetries``: the ids of ``games.symmetry`` (0 identity .. 7) under which the game is invariant,
  for data augmentation (default ``(0,)``); each needs ``transform_action``;
* ``terminal_evaluation``: ``"additive"`` or ``"multiplicative"`` (the winner's score shrinks with
  the length of the game, docs/ALGORITHMS.md section 2) or ``"natural"`` (the game's own margin,
  ``margin()``); default ``"additive"``;
* ``max_legal``: most legal actions in any position (0: ``num_actions``), the search's buffer size;
* ``params``: the parameters, ``{name: default}`` or ``{name: (default, help)}`` (an int, float,
  bool or str default) or a tuple of ``games.registry.Param``, passed to ``__init__`` by keyword; ``version``: change it when the rules change (default 1).

**Methods** every game has: ``to_move``, ``legal_actions``, ``apply``, ``is_terminal``, ``result``,
``encode``, ``action_to_text``, ``text_to_action``. Optional: ``undo`` (without it the adapter keeps
a copy of the position before each move), ``copy`` (default ``copy.deepcopy``), ``key`` (default: the
move history identifies the position), ``transform_action``, ``margin``, ``termination`` and
``__str__`` (the board drawing).
"""
from __future__ import annotations

import copy
from collections.abc import Hashable, Sequence
from typing import Any, ClassVar

import numpy as np

# The methods a game must have, and the optional ones (``games.plugins`` checks the first).
REQUIRED_METHODS = ("to_move", "legal_actions", "apply", "is_terminal", "result", "encode",
                    "action_to_text", "text_to_action")
OPTIONAL_METHODS = ("undo", "copy", "key", "transform_action", "margin", "termination")
TERMINAL_EVALUATIONS = {"additive": 0, "multiplicative": 1, "natural": 2}


class Game:
    """Base class of a game written in Python (see the module docstring). Override the methods that
    raise ``NotImplementedError``; the others have defaults."""

    players: tuple[str, str] = ("first", "second")
    num_actions: int = 0
    max_plies: int = 0
    planes_shape: tuple[int, int, int] = (0, 0, 0)
    symmetries: tuple[int, ...] = (0,)
    terminal_evaluation: str = "additive"
    max_legal: int = 0
    params: ClassVar[Any] = {}
    version: ClassVar[int] = 1

    # ---- required ---------------------------------------------------------------------------------
    def to_move(self) -> int:
        """The player to move: 0 (the first player) or 1. Not necessarily the other one after each
        move (a pass, two stones a turn)."""
        raise NotImplementedError

    def legal_actions(self) -> Sequence[int]:
        """The legal actions, sorted ascending, each in ``[0, num_actions)``; empty exactly when the
        game is over."""
        raise NotImplementedError

    def apply(self, action: int) -> None:
        """Play the legal action ``action`` (in place)."""
        raise NotImplementedError

    def is_terminal(self) -> bool:
        """Whether the game is over (the adapter adds the ply cap)."""
        raise NotImplementedError

    def result(self) -> int:
        """The outcome of a finished game from the first player's point of view: +1 the first
        player won, 0 a draw, -1 the second player won."""
        raise NotImplementedError

    def encode(self) -> np.ndarray:
        """The network input: a float32 array shaped ``planes_shape`` (H, W, C), from the point of
        view of the player to move; the same position always gives the same planes."""
        raise NotImplementedError

    def action_to_text(self, action: int) -> str:
        """The notation of ``action`` (any action id, legal here or not)."""
        raise NotImplementedError

    def text_to_action(self, text: str) -> int:
        """The action id of a move text (raise ``ValueError`` for text that is not a move);
        ``text_to_action(action_to_text(a)) == a``."""
        raise NotImplementedError

    # ---- optional ---------------------------------------------------------------------------------
    def copy(self) -> Game:
        """An independent copy (default ``copy.deepcopy``)."""
        return copy.deepcopy(self)

    def key(self) -> Hashable | None:
        """A value (an int, bytes, str or tuple of them) that identifies the position and everything
        its future depends on (the player to move; the ply when the ply cap can end the game early);
        None (the default): the adapter hashes the move history, so two move orders reaching one
        position are two positions to the search (correct, but no transpositions are shared)."""
        return None

    def margin(self) -> float:
        """For ``terminal_evaluation = "natural"``: the first player's margin in [-1, 1] (e.g. the
        disc difference over the board size) of a finished game."""
        return 0.0

    def termination(self) -> str | None:
        """Why the game ended, in words (None: 'win' or 'draw')."""
        return None

    def transform_action(self, sym: int, action: int) -> int:
        """The image of ``action`` under the symmetry ``sym`` (an id of ``games.symmetry``), for the
        symmetries the game lists: playing the images of a game's moves gives positions whose planes
        are ``games.symmetry.transform_planes`` of the original ones."""
        if sym == 0:
            return action
        raise NotImplementedError

    # undo(self, action: int) -> None: take back ``action``, the last action applied. Optional, not
    # defined here: when a game has none, the adapter keeps a copy of the position before each move.
