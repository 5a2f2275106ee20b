"""Descent self-play in Cython: many games per process, their expansions evaluated in one batch.

``SelfPlayPool`` keeps ``games_in_flight`` games going. Each game has its own search tree (the
Descent core's transposition table, ``search_ext.descent_core.Table``, kept across the game's
moves) and runs Descent (docs/ALGORITHMS.md section 5) through the core's one resumable walk
(``search_ext.descent_core.Walk``, the same as ``search_ext.bestfirst.BestFirstSearch``'s) with the
rules of Unbounded Minimax with completion: every iteration goes down from the root, expanding each
unexpanded state it meets, along the best unresolved child by (completion, value, count) in the
mover's view, until a terminal or resolved state; then the values and resolutions are backed up
along the path. When the walk needs the values of an expansion's children it stops; the rounds
are the one batcher's (``search_ext.batcher.Batcher``): it gathers the pending children of every
game into one batch, calls ``evaluate`` (``values(planes) -> values``: search knows nothing of the
network behind it) once, less what its value cache holds, hands the values back, and every game
resumes. Games finish and start independently. No proofs are kept (self-play needs none).

Move choice (the core's ``choose_edge``): after ``iterations`` iterations (or ``seconds``, or a
resolved root) the move is drawn from the ordinal distribution over the root actions ranked best
first by (c, v) in the mover's view, P(rank i) = (e + (1 - e) / (n - i)) * (1 - sum_{j<i} P(rank j)),
or epsilon-greedy.

Tree learning: every expanded state and every terminal state reached becomes an example (its
encoding, its value from the mover's point of view). When the root moves on, the states that are
no longer reachable from the new root are emitted as examples and dropped from the table
(compaction), so the table holds only the live subtree and memory stays bounded by it.

Memory: ``max_nodes`` caps each game's table. When it is full the move is decided from the tree
built so far (a random legal move when even the root could not be expanded) and counted in
``short_moves``; nothing is raised mid-game. ``max_example_bytes`` (0: no cap) caps each game's
buffer of tree-learning examples (``Examples.limit``: the buffer never holds more; states past it
are dropped): a compaction's harvest stops at three quarters of it (and is skipped once the buffer
is there), the game's last harvest (its end, the terminal states) may fill the rest, so the game
plays on with fewer examples instead of growing (a long game's harvested examples otherwise grow
with its length: chess, ~5 KB an example). Harvests that dropped states are counted in
``dropped_harvests``, the states in ``dropped_examples``. A finished game's buffer becomes its
``x`` and ``y`` arrays (no copy: its examples are never held twice).

History: a terminal state is keyed apart from a non-terminal state of the same key (the table
matches the terminal flag too: a repetition draw or a ply-cap draw never shares a node with the same
position elsewhere in the tree); the walk follows the current state's key, not only the child index
stored on the edge (docs/ALGORITHMS.md, "One walk").
"""
from libc.stdlib cimport malloc, free, realloc
from search_ext.clock cimport now

from cython.view cimport array as cvarray

import numpy as np

from games._state cimport State
from games._typedefs cimport action_t, hash_t, uint64_t, rng_below
from search_ext.descent_core cimport (
    Examples, Node, Table, Walk, TABLE_NO_MEMORY, RULE_MINIMAX, WALK_DONE, WALK_EVAL, examples_free,
    harvest, skey, choose_edge)
from search_ext.descent_core import ordinal_probabilities, sample_ranks
from games import validate
from games.errors import GameError
from search_ext.batcher cimport Batcher, Evaluation, Walker

__all__ = ["SelfPlayPool", "ordinal_probabilities", "sample_ranks"]

cdef long NO_EDGE_CAP = 2_000_000_000     # the pool caps states only (``max_nodes``)


cdef enum:
    ADV_EVAL = 1        # the game waits for the values of an expansion's children
    ADV_DONE = 2        # the game is over
    ADV_OOM = -1        # memory could not be allocated (malloc failed)

cdef class SelfPlayPool


# ---- one game in flight -----------------------------------------------------------------------------

cdef object handed_over(float* p, tuple shape):
    """A float32 array of ``shape`` that takes ownership of ``p`` (malloc'd, at least the shape's
    floats): no copy; ``p`` is freed with the last array that views it."""
    cdef cvarray a = cvarray(shape=shape, itemsize=sizeof(float), format="f", mode="c",
                             allocate_buffer=False)
    a.data = <char*>p
    a.callback_free_data = free
    return np.asarray(a)


cdef class Slot(Walker):
    cdef State s                 # the game position
    cdef State cur               # the iteration's walker (equals s between iterations)
    cdef State base              # the position of the last compaction: the tree's top
    cdef int base_node
    cdef int base_ply
    cdef int compactions
    cdef Table tree
    cdef Walk walk               # the core's walk over the tree (Descent, Unbounded Minimax rules)
    cdef int root
    cdef int path_cap
    cdef bint in_iter
    cdef long iters_move
    cdef double move_t0
    cdef int pending_n
    cdef int* kids
    cdef action_t* acts
    cdef uint64_t rng
    cdef double e, epsilon
    cdef bint full
    cdef bint active
    cdef object tag
    cdef int plies
    cdef action_t* moves
    cdef float* root_values
    cdef signed char* movers
    cdef int short_moves
    cdef int dropped_harvests    # compactions whose states were dropped without examples (the cap)
    cdef long iterations_total
    cdef Examples ex             # the game's tree-learning examples so far
    cdef double t_start
    cdef SelfPlayPool pool       # the pool that plays it (its budget and upkeep)
    cdef Evaluation ev           # the pool's evaluation: the round's buffer of planes

    def __cinit__(self, object info, long max_nodes):
        self.tree = Table(max_nodes, NO_EDGE_CAP)
        self.s = info.new_state()
        n = info.branching
        self.path_cap = self.s.max_plies + 4
        h, w, c = info.planes_shape
        # Descent with the rules of Unbounded Minimax; self-play needs no proofs
        self.walk = Walk(self.tree, n, self.path_cap, h * w * c, rule=RULE_MINIMAX, proofs=False,
                         descent=True, encode=True)
        self.kids = <int*>malloc(sizeof(int) * n)
        self.acts = <action_t*>malloc(sizeof(action_t) * n)
        self.moves = <action_t*>malloc(sizeof(action_t) * self.path_cap)
        self.root_values = <float*>malloc(sizeof(float) * self.path_cap)
        self.movers = <signed char*>malloc(self.path_cap)
        if not (self.kids and self.acts and self.moves
                and self.root_values and self.movers):
            raise MemoryError()
        self.ex.enc_size = h * w * c

    def __dealloc__(self):
        free(self.kids); free(self.acts)
        free(self.moves); free(self.root_values); free(self.movers)
        examples_free(&self.ex)

    # ---- a walker of the batcher (search_ext.batcher) ----------------------------------------------
    cdef int step_c(self, Batcher batcher) except -1:
        """Play on until the walk waits for values (1: its children's planes written to the
        evaluation's buffer and claimed) or the game is over (0)."""
        cdef Evaluation ev = self.ev
        cdef int rc
        with nogil:
            rc = self.pool.advance(self, ev.bufp, ev.n)
        if rc == ADV_EVAL:
            ev.claim_c(self, self.pending_n)
            return 1
        if rc == ADV_DONE:
            return 0
        raise MemoryError("self-play: out of memory")

    cdef int supply_c(self, object values, const float* p, double seconds) except -1:
        with nogil:
            self.walk.supply(p)
        self.pending_n = 0
        return 0


cdef class SelfPlayPool:
    """``games_in_flight`` Descent self-play games in one process, one network call per round.

    ``evaluate(batch) -> values``: batch float32 (n, H, W, C) of encoded states, values (n,) in
    [-1, 1] from the point of view of each state's player to move. Budget per move: ``iterations``
    (and/or ``seconds`` of wall-clock time per move and game). ``max_nodes``: table cap per game.

    The rounds are ``search_ext.batcher.Batcher``'s (the one round loop, also
    ``descent.batched``'s): ``cache_states`` > 0 puts a value cache of that many states in front of
    ``evaluate`` (a state valued in one game in flight is not asked for again: the games' openings
    share most of their states); ``refresh() -> bool``, asked before every round, says that
    ``evaluate``'s values changed (new weights), which empties the cache.
    """
    cdef readonly object info
    cdef object evaluate
    cdef readonly long iterations
    cdef readonly double seconds
    cdef readonly int games_in_flight
    cdef readonly long max_nodes
    cdef readonly long compact_at
    cdef readonly long max_example_bytes
    cdef list slots
    cdef readonly Batcher batcher       # the rounds, the evaluator's cache (search_ext.batcher)
    cdef Evaluation ev
    cdef int branching, enc_size
    cdef readonly long games_finished, plies_finished, iterations_finished
    cdef int n_live

    def __init__(self, info, evaluate, iterations=50, seconds=0.0, games_in_flight=1,
                 max_nodes=2_000_000, compact_at=-1, max_example_bytes=0, cache_states=0,
                 refresh=None):
        # checked here, before any conversion to a C type (GameError, never OverflowError)
        iterations = validate.count(iterations, "self-play pool: iterations", 0)
        seconds = validate.seconds(seconds, "self-play pool: seconds", allow_zero=True)
        games_in_flight = validate.count(games_in_flight, "self-play pool: games_in_flight", 1, 1_000_000)
        max_nodes = validate.count(max_nodes, "self-play pool: max_nodes", 1, 2 ** 62)
        compact_at = validate.integer(compact_at, "self-play pool: compact_at", -1, 2 ** 62)
        max_example_bytes = validate.integer(max_example_bytes, "self-play pool: max_example_bytes", 0, 2 ** 62)
        cache_states = validate.integer(cache_states, "self-play pool: cache_states", 0, 2 ** 40)
        if iterations <= 0 and seconds <= 0.0:
            raise GameError("self-play pool: give a budget: iterations > 0 or seconds > 0")
        if max_nodes < 2 * info.branching + 16:
            raise GameError(f"self-play pool: max_nodes must be >= {2 * info.branching + 16} for {info.spec} "
                            f"(twice the branching factor and some), got {max_nodes}")
        self.info = info
        self.evaluate = evaluate
        self.iterations = iterations
        self.seconds = seconds
        self.games_in_flight = games_in_flight
        self.max_nodes = max_nodes
        self.compact_at = max_nodes // 2 if compact_at < 0 else compact_at
        self.max_example_bytes = max_example_bytes
        self.branching = info.branching
        h, w, c = info.planes_shape
        self.enc_size = h * w * c
        self.batcher = Batcher(games_in_flight, cache_states)
        self.ev = self.batcher.evaluation("network", evaluate, info.planes_shape, self.branching, refresh)
        self.slots = [Slot(info, max_nodes) for _ in range(games_in_flight)]

    @property
    def rounds(self) -> int:
        """Rounds played: every game in flight advanced to its next expansion, one network call."""
        return self.batcher.rounds

    @property
    def eval_calls(self) -> int:
        """Calls of ``evaluate`` (a round whose states the cache held all makes none)."""
        return self.batcher.calls

    @property
    def eval_states(self) -> int:
        """States valued: asked of ``evaluate`` (``net_states``) or answered by the cache."""
        return self.batcher.states + self.batcher.cached

    @property
    def net_states(self) -> int:
        """States ``evaluate`` was asked for."""
        return self.batcher.states

    @property
    def cached_states(self) -> int:
        """States whose value came from the cache."""
        return self.batcher.cached

    @property
    def abandoned(self) -> int:
        """Games given up in flight when ``stop`` ended a ``run``."""
        return self.batcher.abandoned

    cdef long buffer_bytes(self):
        """The evaluation's buffers and the value cache."""
        cache = self.ev.cache
        return self.ev.nbytes + (cache.bytes if cache is not None else 0)

    def memory_bytes(self) -> int:
        """Bytes held now by the tables, the pending examples, the batch buffers and the cache."""
        cdef Slot g
        total = self.buffer_bytes()
        for g in self.slots:
            total += g.tree.bytes_used() + g.ex.cap * (g.ex.enc_size + 1) * 4
        return total

    def progress_info(self) -> dict:
        """Where self-play stands, from counts only (cheap: a pass over the games in flight):
        ``rounds``, ``games_in_flight`` (games being played now), ``games_finished``, ``plies`` and
        ``iterations`` (finished and in-flight games together), ``longest_game`` (plies of the
        longest game in flight), ``table_states`` and ``table_bytes`` (the games' tables now),
        ``example_bytes`` (their pending tree-learning examples), ``memory_bytes`` (tables,
        examples, the batch buffers and the cache: ``memory_bytes()``), ``eval_states`` and
        ``abandoned``."""
        cdef Slot g
        plies, iters, longest, states, tbytes, xbytes = 0, 0, 0, 0, 0, 0
        for g in self.slots:
            if not g.active:
                continue
            plies += g.plies
            iters += g.iterations_total
            longest = max(longest, g.plies)
            states += g.tree.n_nodes
            tbytes += g.tree.bytes_used()
            xbytes += g.ex.cap * (g.ex.enc_size + 1) * 4
        return {"rounds": int(self.rounds), "games_in_flight": int(self.n_live),
                "games_finished": int(self.games_finished),
                "plies": int(self.plies_finished + plies),
                "iterations": int(self.iterations_finished + iters), "longest_game": int(longest),
                "table_states": int(states), "table_bytes": int(tbytes),
                "example_bytes": int(xbytes), "memory_bytes": int(tbytes + xbytes + self.buffer_bytes()),
                "eval_states": int(self.eval_states), "abandoned": int(self.abandoned)}

    # ---- game life -----------------------------------------------------------------------------
    cdef void start(self, Slot g, tuple params):
        seed, e, epsilon, tag = params
        g.pool = self
        g.ev = self.ev
        g.s = self.info.new_state()
        g.cur = g.s.clone()
        g.walk.place(g.cur)
        g.base = g.s.clone()
        g.tree.clear()
        g.tree.peak_nodes = 0
        cdef bint created
        g.root = g.tree.lookup(skey(g.s), g.s._terminal, g.s._player, &created)
        g.base_node = g.root
        g.base_ply = 0
        g.compactions = 0
        g.rng = (<uint64_t>seed) * <uint64_t>0x9E3779B97F4A7C15ULL + 1
        g.e = e
        g.epsilon = epsilon
        g.tag = tag
        g.in_iter = False
        g.iters_move = 0
        g.move_t0 = now()
        g.t_start = g.move_t0
        g.pending_n = 0
        g.full = False
        g.active = True
        g.plies = 0
        g.short_moves = 0
        g.dropped_harvests = 0
        g.iterations_total = 0
        g.ex.n = 0
        g.ex.dropped = 0

    cdef dict finish(self, Slot g):
        h, w, c = self.info.planes_shape
        cdef long n = g.ex.n
        cdef float* p
        if n:
            # the buffer itself becomes the arrays (shrunk to its examples): no copy, so a game's
            # examples are never held twice (the copy doubled a long game's peak: chess, 150 MB)
            p = <float*>realloc(g.ex.x, sizeof(float) * n * g.ex.enc_size)
            if p != NULL:
                g.ex.x = p
            p = <float*>realloc(g.ex.y, sizeof(float) * n)
            if p != NULL:
                g.ex.y = p
            x = handed_over(g.ex.x, (n, h, w, c))
            g.ex.x = NULL
            y = handed_over(g.ex.y, (n,))
            g.ex.y = NULL
        else:
            x = np.empty((0, h, w, c), dtype=np.float32)
            y = np.empty(0, dtype=np.float32)
        moves = [int(g.moves[i]) for i in range(g.plies)]
        rv = np.array([g.root_values[i] for i in range(g.plies)], dtype=np.float32)
        mv = np.array([g.movers[i] for i in range(g.plies)], dtype=np.int8)
        out = {"x": x, "y": y, "result": int(g.s._result), "plies": int(g.plies), "moves": moves,
               "root_values": rv, "movers": mv, "short_moves": int(g.short_moves),
               "iterations": int(g.iterations_total), "peak_nodes": int(g.tree.peak_nodes),
               "compactions": int(g.compactions), "dropped_harvests": int(g.dropped_harvests),
               "dropped_examples": int(g.ex.dropped),
               "seconds": now() - g.t_start, "tag": g.tag}
        self.games_finished += 1
        self.plies_finished += g.plies
        self.iterations_finished += g.iterations_total
        examples_free(&g.ex)       # what is left of the buffer (handed over above: nothing)
        return out

    # ---- the Descent iteration: the core's walk, resumable ----------------------------------------
    cdef bint move_done(self, Slot g) noexcept nogil:
        if g.full or g.tree.nodes[g.root].r:
            return True
        if g.iters_move < 1:
            return False
        if self.iterations > 0 and g.iters_move >= self.iterations:
            return True
        if self.seconds > 0.0 and now() - g.move_t0 >= self.seconds:
            return True
        return False

    cdef bint harvest_fits(self, Slot g, bint last) noexcept nogil:
        """Whether a harvest may add to the game's example buffer, and its limit set: with
        ``max_example_bytes`` (0: no cap) the buffer holds at most that many bytes of examples
        (``Examples.limit``: the states past it are dropped, the buffer never grows past it). A
        compaction's harvest stops at three quarters of it, and is skipped once the buffer has
        reached that, so the game's last harvest (its end: the terminal states) always has a
        quarter of the room. (An estimate of the harvest before making it, counting the table's
        unmarked expanded and terminal states, overcounted chess's by over 2x and dropped most of
        its examples.)"""
        cdef long most
        if self.max_example_bytes <= 0:
            g.ex.limit = 0
            return True
        most = max(1, self.max_example_bytes // ((g.ex.enc_size + 1) * 4))
        g.ex.limit = most if last else max(1, most - most // 4)
        return g.ex.n < g.ex.limit

    cdef int play_move(self, Slot g) noexcept nogil:
        """Choose and play the move at the searched root; harvest and compact the table.
        Returns 1 when the game is over, 0 otherwise, -1 when memory ran out."""
        cdef Node* nd = &g.tree.nodes[g.root]
        cdef int n, i
        cdef action_t a
        cdef double sg = 1.0 if nd.player == 0 else -1.0
        if (self.iterations > 0 and g.iters_move < self.iterations and not nd.r):
            g.short_moves += 1
        g.root_values[g.plies] = <float>(sg * nd.v)
        g.movers[g.plies] = <signed char>g.s._player
        if nd.expanded and nd.n_edges > 0:
            a = g.tree.edges[choose_edge(g.tree, g.root, g.e, g.epsilon, &g.rng, g.kids)].action
        else:
            n = g.s.legal_actions(g.acts)
            a = g.acts[rng_below(&g.rng, n)]
        g.moves[g.plies] = a
        g.plies += 1
        # the new root's node, if the tree has it
        g.cur.apply(a)
        cdef hash_t key = skey(g.cur)
        cdef bint over = g.cur._terminal
        g.cur.undo()
        cdef int new_root = -1 if over else g.tree.find(key, False)
        cdef bint compacting = over or g.tree.n_nodes > self.compact_at
        cdef long dropped
        if compacting:
            # emit the states the new root cannot reach (all of them at the end), drop them
            if g.tree.mark_reachable(new_root) < 0:
                return -1
            dropped = g.ex.dropped
            if not self.harvest_fits(g, over):
                g.dropped_harvests += 1
            elif harvest(g.tree, g.base, g.base_node, g.path_cap, &g.ex) < 0:
                return -1
            elif g.ex.dropped > dropped:
                g.dropped_harvests += 1          # stopped at the buffer's limit
            if g.tree.compact(-1) == TABLE_NO_MEMORY:
                return -1
            g.compactions += 1
        g.s.apply(a)
        g.cur.apply(a)
        if over:
            return 1
        cdef bint created
        g.root = g.tree.lookup(key, False, g.s._player, &created)
        if g.root < 0:
            return -1
        if compacting:
            for i in range(g.base_ply, g.plies):
                g.base.apply(g.moves[i])
            g.base_ply = g.plies
            g.base_node = g.root
        g.iters_move = 0
        g.full = False
        g.move_t0 = now()
        return 0

    cdef int advance(self, Slot g, float* batch, int off) noexcept nogil:
        """Run game `g` until it needs an evaluation (ADV_EVAL: g.pending_n states written to the
        batch from `off`) or is over (ADV_DONE)."""
        cdef int rc
        while True:
            if not g.in_iter:
                if self.move_done(g):
                    rc = self.play_move(g)
                    if rc < 0:
                        return ADV_OOM
                    if rc == 1:
                        return ADV_DONE
                    continue
                g.in_iter = True
                g.walk.begin(g.root)
            rc = g.walk.step(batch + <long>off * self.enc_size)
            if rc == WALK_EVAL:
                g.pending_n = g.walk.n_pend
                return ADV_EVAL
            g.in_iter = False
            if rc == WALK_DONE:
                g.iters_move += 1
                g.iterations_total += 1
            else:
                g.full = True                   # the table is full: the move is decided now

    # ---- driver --------------------------------------------------------------------------------
    def run(self, new_game, on_game, stop=None, progress=None, long progress_every=64):
        """Play games until ``new_game()`` returns None and every game in flight is over, or until
        ``stop()`` returns true (checked once per round, before the round): the games still in
        flight are then abandoned (counted in ``abandoned``; their examples are dropped) and
        ``run`` returns at once. Returns the number of games abandoned by this call.

        ``new_game() -> (seed, e, epsilon, tag)`` or None (epsilon < 0: ordinal distribution with
        parameter e); ``on_game(result)`` is called as each game ends, with a dict: ``x``, ``y``
        (tree-learning examples: float32 (n, H, W, C) encodings and (n,) values, each from its
        state's mover's view), ``result`` (b_t, first player), ``plies``, ``moves``,
        ``root_values`` (the root's value before each move, mover's view), ``movers``,
        ``short_moves`` (moves searched with fewer iterations than asked: a full table),
        ``dropped_harvests`` (compactions whose examples were dropped, all or those past the
        buffer's limit: ``max_example_bytes``), ``dropped_examples`` (the latter's count),
        ``iterations``, ``peak_nodes``, ``compactions``, ``seconds`` and ``tag``.

        ``progress(info)``, if given, is called every ``progress_every`` rounds (a round: every
        game in flight advanced to its next expansion, one ``evaluate`` call), before the round,
        with ``progress_info()``: driven by counts, so a long game reports while it is played.
        """
        if progress_every < 1:
            raise ValueError(f"progress_every must be >= 1, got {progress_every}")
        cdef Slot g
        free_slots = list(reversed(self.slots))      # a finished game's slot plays the next one
        since = 0

        def start():
            params = new_game()
            if params is None:
                return None
            g = free_slots.pop()
            self.start(g, tuple(params))
            return g

        def before_round():
            nonlocal since
            self.n_live = len(self.batcher.live)
            if progress is not None:
                if since == 0:
                    progress(self.progress_info())
                since += 1
                if since >= progress_every:
                    since = 0

        for g in self.batcher.play(start, stop, before_round):
            g.active = False
            free_slots.append(g)
            on_game(self.finish(g))     # no reference kept here: its examples go with it
        given_up = self.batcher.given_up
        for g in given_up:
            g.active = False
        self.n_live = 0
        return len(given_up)
