# Type stub of the compiled module games/havannah.pyx (the source of truth); tests/test_stubs.py checks
# that the names here and in the module agree.
from typing import Any

from games._state import State
from games.registry import GameInfo

LETTERS: str
SYMBOLS: str
PLAYERS: tuple[str, str]

def facts(params: dict[str, Any]) -> dict[str, Any]: ...
def empty_position(base: int) -> str: ...

class HavannahState(State):
    def __init__(self, info: GameInfo) -> None: ...
