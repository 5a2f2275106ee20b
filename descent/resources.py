"""Where the files that ship with descent live: the game configs and the shipped networks.

In a source checkout (an editable install, or the repository on ``PYTHONPATH``) they are the
repository's own ``configs/`` and ``checkpoints/shipped/``. An installed wheel carries the same files
as package data under ``descent/data/`` (``pyproject.toml`` maps ``descent.data.configs`` to
``configs/`` and ``descent.data.shipped`` to ``checkpoints/shipped/``), so a non-editable install
finds them wherever it is run from. Users' runs never go here: see ``training.run.data_root``.
"""
from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent
_CHECKOUT = _PACKAGE.parent


def _pick(in_checkout: str, installed: str) -> Path:
    here = _CHECKOUT / in_checkout
    if (_CHECKOUT / "setup.py").is_file() and here.is_dir():
        return here
    return _PACKAGE / "data" / installed


CONFIG_DIR = _pick("configs", "configs")
SHIPPED_DIR = _pick("checkpoints/shipped", "shipped")


def install_extra_command(extra: str) -> str:
    """The command that installs this project's optional ``extra`` (``web``, ``test``): from a
    source checkout, ``pip install -e '<the checkout>[extra]'``; an installed copy names the
    extra's own packages (a bare ``descent[extra]`` would fetch an unrelated project of that name
    from the package index)."""
    if (_CHECKOUT / "pyproject.toml").is_file() and (_CHECKOUT / "setup.py").is_file():
        return f"pip install -e '{_CHECKOUT}[{extra}]'"
    packages = {"web": "'starlette>=0.37' 'uvicorn>=0.29'"}
    return f"pip install {packages.get(extra, extra)}"
