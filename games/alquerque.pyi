# Type stub of the compiled module games/alquerque.pyx (the source of truth); tests/test_stubs.py checks
# that the names here and in the module agree.
from collections.abc import Iterable
from typing import Any

from games._state import State
from games.registry import GameInfo

REASONS: dict[int, str]
SYMBOLS: str
MAX_PLIES: int
PIECES: int
START: str
STEPS: list[tuple[int, int]]
STEP_ID: dict[tuple[int, int], int]
JUMPS: list[list[tuple[int, int]]]
JUMP_MID: dict[tuple[int, int], int]
NUM_CAPTURES: int

def facts(params: dict[str, Any]) -> dict[str, Any]: ...
def capture_entry(index: int) -> tuple[int, int, tuple[int, ...]]: ...
def capture_id(f: int, t: int, captured: Iterable[int]) -> int: ...

class AlquerqueState(State):
    def __init__(self, info: GameInfo) -> None: ...
