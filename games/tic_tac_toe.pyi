# Type stub of the compiled module games/tic_tac_toe.pyx (the source of truth); tests/test_stubs.py checks
# that the names here and in the module agree.
from typing import Any

from games._state import State
from games.registry import GameInfo

SYMBOLS: str

def facts(params: dict[str, Any]) -> dict[str, Any]: ...

class TicTacToeState(State):
    def __init__(self, info: GameInfo) -> None: ...
