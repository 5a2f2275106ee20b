# Type stub of the compiled module games/tapatan.pyx (the source of truth); tests/test_stubs.py checks
# that the names here and in the module agree.
from typing import Any

from games._align import AlignState
from games.registry import GameInfo

SYMBOLS: str
MAX_PLIES: int
PRESET: str
MOVES: list[tuple[int, int, int]]    # (from, to, jumped point or -1)
LINES: list[tuple[int, int, int]]
MOVE_ID: dict[tuple[int, int], int]

def facts(params: dict[str, Any]) -> dict[str, Any]: ...

class TapatanState(AlignState):
    def __init__(self, info: GameInfo) -> None: ...
