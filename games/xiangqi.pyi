# Type stub of the compiled module games/xiangqi.pyx (the source of truth); tests/test_stubs.py checks
# that the names here and in the module agree.
from typing import Any

from games._state import State
from games.registry import GameInfo

PIECE_LETTERS: str
FILES: str
START_FEN: str
SIDES: tuple[str, str]

def facts(params: dict[str, Any]) -> dict[str, Any]: ...

class XiangqiState(State):
    def __init__(self, info: GameInfo) -> None: ...
    def piece_at(self, square: int) -> str | None: ...
    def in_check(self) -> bool: ...
