# Type stub of the compiled module search_ext/evaluators.pyx (the source of truth); tests/test_stubs.py
# checks that the names here and in the module agree.
from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from games.registry import GameInfo

ESTIMATE_SHARE: float

def decided_floor(info: GameInfo) -> float: ...
def estimate_scale(info: GameInfo) -> float: ...

class Evaluator:
    needs_encoding: bool
    bounded: bool
    def __init__(self) -> None: ...
    def describe(self) -> str: ...

class ZeroEvaluator(Evaluator): ...

def check_evaluator(evaluator: object, what: str = "evaluator") -> Evaluator | None: ...

class PlayoutEvaluator(Evaluator):
    playouts: int
    max_plies: int
    use_score: bool
    def __init__(self, playouts: int = 15, max_plies: int = 100, use_score: bool = False,
                 seed: int = 0) -> None: ...
    def reseed(self, seed: int) -> None: ...

class CallableEvaluator(Evaluator):
    # fn(batch) -> values: batch float32 (n, H, W, C), n values
    fn: Callable[[NDArray[np.float32]], ArrayLike]
    def __init__(self, fn: Callable[[NDArray[np.float32]], ArrayLike], shape: Sequence[int]) -> None: ...

class RandomValueEvaluator(Evaluator):
    def __init__(self, seed: int = 0) -> None: ...

def heuristic_evaluator(info: GameInfo) -> CallableEvaluator: ...
