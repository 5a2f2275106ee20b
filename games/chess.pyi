# Type stub of the compiled module games/chess.pyx (the source of truth); tests/test_stubs.py checks
# that the names here and in the module agree.
from typing import Any

from games._state import State
from games.registry import GameInfo

REASONS: tuple[str | None, ...]
START_FEN: str
PIECE_LETTERS: str
SYMBOLS: str
FILES: str
CASTLE_LETTERS: str

def facts(params: dict[str, Any]) -> dict[str, Any]: ...
def square_name(sq: int) -> str: ...

class ChessState(State):
    def __init__(self, info: GameInfo) -> None: ...
    def is_check(self) -> bool: ...
    def piece_at(self, sq: int) -> str | None: ...
