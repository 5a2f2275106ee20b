# Type stub of the compiled module games/python_game.pyx (the source of truth); tests/test_stubs.py checks
# that the names here and in the module agree.
from typing import Any

from games._state import State
from games.registry import GameInfo

def raise_pending() -> None: ...

class PythonGameState(State):
    def __init__(self, info: GameInfo) -> None: ...
    @property
    def game_object(self) -> Any: ...
