"""Explicit game trees: a game given node by node, for checking search algorithms on hand-built
trees and on random trees (e.g. seed 002's arc-sum trees).

``make_tree(tree)`` takes a nested description: a leaf is a number (its f_t, first player's view;
b_t is its sign) or a dict ``{"value": v, "result": b}``; an internal node is a dict
``{"player": p, "children": [...], "h": heuristic}`` (``h``: the value a leaf evaluator should give,
first player's view, read from the encoding) or a list (children; the player alternates). The root
is node 0; action k is the k-th child. The encoding is (1, 1, 2): [h from the mover's view, node id];
``search_ext.evaluators.heuristic_evaluator(info)`` is the leaf evaluator that reads ``h`` (the game
layer knows nothing of search).
"""
from libc.stdlib cimport malloc, free

from games._state cimport State, SCORE_NATURAL
from games._typedefs cimport action_t, splitmix64, uint64_t

from games.errors import InvalidMoveError, InvalidPositionError
from games.registry import GameDef, GameInfo


cdef class TreeState(State):
    cdef int node
    cdef int n_nodes
    cdef int* parent
    cdef int* first_child
    cdef int* n_children
    cdef signed char* player
    cdef signed char* result
    cdef double* value
    cdef object tree_arrays      # keeps the Python lists alive for copies

    def __init__(self, info):
        self._init_base(info)
        arrays = info.extra["_arrays"]
        self.tree_arrays = arrays
        n = len(arrays["player"])
        self.n_nodes = n
        self.parent = <int*>malloc(sizeof(int) * n)
        self.first_child = <int*>malloc(sizeof(int) * n)
        self.n_children = <int*>malloc(sizeof(int) * n)
        self.player = <signed char*>malloc(n)
        self.result = <signed char*>malloc(n)
        self.value = <double*>malloc(sizeof(double) * n)
        for i in range(n):
            self.parent[i] = arrays["parent"][i]
            self.first_child[i] = arrays["first_child"][i]
            self.n_children[i] = arrays["n_children"][i]
            self.player[i] = arrays["player"][i]
            self.result[i] = arrays["result"][i]
            self.value[i] = arrays["value"][i]
        self._goto(0)

    def __dealloc__(self):
        free(self.parent); free(self.first_child); free(self.n_children)
        free(self.player); free(self.result); free(self.value)

    cdef void _goto(self, int node) noexcept nogil:
        cdef uint64_t seed = <uint64_t>node * 0x9E3779B97F4A7C15ULL + 12345
        self.node = node
        self._player = self.player[node]
        self._hash = splitmix64(&seed)
        self._terminal = self.n_children[node] == 0
        self._result = self.result[node] if self._terminal else 0

    cdef int legal_actions(self, action_t* out) noexcept nogil:
        cdef int k
        if self._terminal:
            return 0
        for k in range(self.n_children[self.node]):
            out[k] = k
        return self.n_children[self.node]

    cdef void _do_apply(self, action_t a) noexcept nogil:
        self._goto(self.first_child[self.node] + a)

    cdef void _do_undo(self, action_t a) noexcept nogil:
        self.node = self.parent[self.node]

    cdef double terminal_value(self) noexcept nogil:
        return self.value[self.node]

    cdef void encode(self, float* out) noexcept nogil:
        cdef double h = self.value[self.node]
        out[0] = <float>(h if self._player == 0 else -h)
        out[1] = <float>self.node

    cdef void _copy_to(self, State dst) noexcept:
        (<TreeState>dst).node = self.node

    @property
    def node_id(self) -> int:
        return self.node

    def _parse_move_text(self, str text) -> int:
        if not text.isdigit() or not text.isascii() or len(text) > 9:
            raise InvalidMoveError(f"tree move {text!r} must be a child index")
        return int(text)

    def _move_text(self, int action) -> str:
        return str(action)

    def _position_text(self) -> str:
        return f"node {self.node}"

    def _set_position_text(self, str text) -> None:
        parts = text.split()
        if (len(parts) != 2 or parts[0] != "node" or not parts[1].isdigit() or not parts[1].isascii()
                or len(parts[1]) > 9 or int(parts[1]) >= self.n_nodes):
            raise InvalidPositionError(f"tree: position {text!r} must be 'node N' with N < {self.n_nodes}")
        self._goto(int(parts[1]))

    def _transform_action(self, int sym, int action) -> int:
        return action


def _flatten(tree):
    """Breadth-first arrays of a nested tree description."""
    player, parent, first_child, n_children, result, value = [], [], [], [], [], []
    queue = [(tree, -1, 0)]
    i = 0
    while i < len(queue):
        node, par, default_player = queue[i]
        if isinstance(node, (int, float)):
            node = {"value": float(node)}
        elif isinstance(node, list):
            node = {"children": node}
        kids = node.get("children", [])
        p = node.get("player", default_player)
        player.append(p)
        parent.append(par)
        n_children.append(len(kids))
        first_child.append(len(queue) if kids else -1)
        v = float(node.get("value", node.get("h", 0.0)))
        value.append(v)
        b = node.get("result", (v > 0) - (v < 0))
        result.append(int(b) if not kids else 0)
        for k in kids:
            queue.append((k, i, 1 - p))
        i += 1
    return {"player": player, "parent": parent, "first_child": first_child,
            "n_children": n_children, "result": result, "value": value}


def make_tree(tree, name: str = "tree") -> GameInfo:
    """A ``GameInfo`` for an explicit tree (see the module docstring)."""
    arrays = _flatten(tree)
    depth = 0
    for i in range(len(arrays["player"])):
        d, j = 0, i
        while arrays["parent"][j] >= 0:
            j = arrays["parent"][j]
            d += 1
        depth = max(depth, d)
    info = GameInfo(definition=GameDef(name=name, module="games.tree_game", state_class="TreeState",
                                       summary="an explicit game tree"),
                    params={}, spec=f"{name}#{id(arrays):x}", players=("max", "min"),
                    num_actions=max(1, max(arrays["n_children"])), max_plies=max(1, depth),
                    planes_shape=(1, 1, 2), symmetries=(0,), score_kind=SCORE_NATURAL,
                    extra={"_arrays": arrays})
    info._cls = TreeState
    return info
