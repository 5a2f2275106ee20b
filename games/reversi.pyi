# Type stub of the compiled module games/reversi.pyx (the source of truth); tests/test_stubs.py checks
# that the names here and in the module agree.
from typing import Any

from games._state import State
from games.registry import GameInfo

SYMBOLS: str

def facts(params: dict[str, Any]) -> dict[str, Any]: ...

class ReversiState(State):
    def __init__(self, info: GameInfo) -> None: ...
    def disc_counts(self) -> tuple[int, int]: ...
