# Type stub of the compiled module games/_align.pyx (the source of truth); tests/test_stubs.py checks
# that the names here and in the module agree.
from games._state import State

SYMBOLS: str
REASONS: dict[int, str]

class AlignState(State): ...
