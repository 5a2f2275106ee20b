# Type stub of the compiled module games/kono.pyx (the source of truth); tests/test_stubs.py checks
# that the names here and in the module agree.
from typing import Any

from games._state import State
from games.registry import GameInfo

REASONS: dict[int, str]
SYMBOLS: str
MAX_PLIES: int
START: str
STARTS: tuple[list[int], list[int]]
MOVES: list[tuple[int, int]]
MOVE_ID: dict[tuple[int, int], int]
NMOVES: int

def facts(params: dict[str, Any]) -> dict[str, Any]: ...

class FiveFieldKonoState(State):
    def __init__(self, info: GameInfo) -> None: ...
