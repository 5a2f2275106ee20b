# Type stub of the compiled module games/tree_game.pyx (the source of truth); tests/test_stubs.py checks
# that the names here and in the module agree.
from typing import Any, TypeAlias

from games._state import State
from games.registry import GameInfo

# A tree description (see the module docstring): a leaf is a number or {"value": v, "result": b}; an
# internal node is {"player": p, "children": [...], "h": h} or a list of children.
_Tree: TypeAlias = float | dict[str, Any] | list[_Tree]

class TreeState(State):
    def __init__(self, info: GameInfo) -> None: ...
    @property
    def node_id(self) -> int: ...

def make_tree(tree: _Tree, name: str = "tree") -> GameInfo: ...
