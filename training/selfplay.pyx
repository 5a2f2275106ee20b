"""One game of Descent self-play, in Cython: search, move choice and tree learning.

Each move: a Descent search (``BestFirstSearch(descent=True)``, completion on) from the current
state with the per-move budget, the tree kept across the game's moves; the move is drawn from the
ordinal distribution over the root actions (or epsilon-greedy). After the game, every expanded
state of the tree and every terminal state reached becomes a training example (tree learning),
valued from the point of view of the player to move. Python is only involved in the network calls
(the evaluator) and in returning the arrays.
"""
import numpy as np

from games._state cimport State
from games._typedefs cimport uint64_t


def play_game(object info, object search, long iterations, double seconds, double e,
              double epsilon, unsigned long long seed):
    """Play one self-play game. Returns a dict with ``x``, ``y`` (tree-learning examples),
    ``ply`` (the ply of each example's state is not tracked by the table: the game's length is
    given instead), ``result`` (b_t, first player), ``plies``, ``moves`` and ``root_values`` (the
    searched value of each position of the game, its mover's point of view)."""
    cdef State start = info.new_state()
    cdef State s = start.clone()
    cdef long plies = 0
    rng = np.array([seed * 0x9E3779B97F4A7C15 % (1 << 64) + 1], dtype=np.uint64)
    search.reset()
    moves = []
    root_values = []
    movers = []
    while not s._terminal:
        search.search(s, iterations=iterations, seconds=seconds)
        root_values.append(search.root_info(s)["value"])
        movers.append(s._player)
        a = search.choose_selfplay_move(s, e, epsilon, rng)
        moves.append(a)
        s.apply(a)
        plies += 1
    x, y = search.collect_examples(start)
    return {"x": x, "y": y, "result": int(s._result), "plies": int(plies), "moves": moves,
            "root_values": np.asarray(root_values, dtype=np.float32),
            "movers": np.asarray(movers, dtype=np.int8)}
