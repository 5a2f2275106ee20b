"""A search budget as the protocol commands write it (``--times``, ``--opponent-time``, calibration
against the pool): ``time=SECONDS`` (a bare number is seconds) or ``iterations=N``. Shared by
``descent.tournament`` and ``descent.calibrate``, so neither imports the other for it."""
from __future__ import annotations

from games import validate as v
from games.errors import GameError


def parse_budget(text: str, error: type = GameError) -> str:
    """'0.5' or 'time=0.5' -> 'time=0.5'; 'iterations=50' stays; anything else raises ``error``."""
    t = v.text(text, "budget", error, max_len=64).strip()
    k, eq, x = t.partition("=")
    if not eq:
        k, x = "time", t
    if k == "time":
        v.parse_real(x, f"budget {text!r}", 0.0, v.MAX_SECONDS, error, lo_open=True)
    elif k == "iterations":
        v.parse_int(x, f"budget {text!r}", 1, v.MAX_COUNT, error)
    else:
        raise error(f"budget {text!r}: expected time=SECONDS or iterations=N")
    return f"{k}={x.strip()}"
