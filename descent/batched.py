"""Games with networks played many at a time in one process, one network call per round.

A best-first agent with a value network (Unbounded Minimax, Minibal_n, Minibal_+, Descent) spends
most of a game inside the network's ``run``, a few states at a time: each expansion is one call. The
driver here keeps ``games_in_flight`` games going in one process; every search runs the Descent
core's one walk (``search_ext.descent_core.Walk``) in steps (``BestFirstAgent.begin_search``, the
search's ``step`` and ``supply``, ``end_search``): a step runs until the walk needs the values of an
expansion's children, and a round gathers the waiting children of every game into one call per
network, then hands each search its values. The rounds are the one batcher's
(``search_ext.batcher.Batcher``, also self-play's): its evaluator contract is the agent's
``values(planes) -> values``, with the value cache in front and the calls' accounting. The walk, the rules, the table's upkeep and the move decisions are the
ones a game played alone uses, so with iteration budgets, seeds and an evaluator whose values do not
depend on the batch, every game's moves are exactly those of the game played alone
(tests/test_batched.py).

The pieces: ``play`` is the one game coroutine (``descent.match.play_game`` runs it alone, each
move chosen at once); ``move(agent, state)`` is a move as a generator for ``yield from`` (it yields
the agent while its search waits for values); ``drive`` runs any such coroutines many at a time (the
bench ladders and the adaptive check write their own games with ``move``); ``run_batched`` plays
match tasks with it. Each network's values are kept in the batcher's compiled cache
(``search_ext.valuecache.ValueCache``: the batch's states hashed, looked up and the misses gathered
in one call), so a state valued in one game in flight, by either side, is not asked for again.

Agents that cannot be batched (those without a network, or other algorithms) still take part: they
choose their moves synchronously when their turn comes. ``batchable(specs)`` says whether a set of
agents can share the driver; one with a network that is not a best-first agent's cannot (each game
in flight needs its own agent, and building one loads its network again), and the callers then play
the games one by one as before.

Outside engines (``uci:``/``gtp:`` specs) take part too, one engine process per game in flight: a
game takes a free engine of its spec from a pool (starting one when none is free) and gives it back
when it ends, and ``reset`` starts each game afresh (``ucinewgame``/``clear_board``), as one engine
playing the games one after another does. An engine thinks while the driver waits (its move is
asked synchronously); the other side's searches are batched as usual. ``run_batched``'s
``engines``, a dict kept by the caller, keeps the pool across calls (the caller closes it with
``close_engines``); by default the pool is closed when the call ends.

Time. A time budget (``time=S``) keeps a per-game clock: a move's time is the time of its own
search steps plus its share of each network call it took part in (the call's time divided by the
states it valued, times the move's states). Games in flight share one process, so a move's time is
the time spent *for* it, not the wall-clock time between its start and its end (which includes the
other games' steps); records' ``seconds_a`` / ``seconds_b`` add those clocks.

Memory. Each table is capped by its agent's ``max_mb`` / ``max_nodes`` and also by an equal share of
``memory_mb`` (default: the one search's default cap, 1024 MB) among the tables of the games in
flight (two per game), so a process holds no more table memory than one search did. A full table
does in a batch what it does alone: its least visited subtrees are cut back, and when that frees
too little that game's move is decided from what was searched while the other games go on
(counted in the records' ``short_*`` / ``full_*``).
"""
from __future__ import annotations

import copy
import random
import time
from pathlib import Path
from typing import Any


import games
from search_ext.agents import BestFirstAgent
from search_ext.agents import parse_agent
from search_ext.batcher import DEFAULT_CACHE_STATES, Batcher, PyWalker
from search_ext.engine_spec import ENGINE_KINDS
from descent.gamerecord import GameRecord, ProofNote, game_seed, root_proof
from descent.protocols.outside import EngineError
from descent import networks
from search_ext.engine_spec import is_engine_spec
from training.pool import spawn_pool

DEFAULT_GAMES_IN_FLIGHT = 16
DEFAULT_MEMORY_MB = 1024.0       # search_ext.bestfirst.DEFAULT_MAX_MB: one search's default cap


def steppable(agent) -> bool:
    """Can the driver step this agent's searches: a best-first agent with a network."""
    return type(agent) is BestFirstAgent and agent.values is not None


def batchable(specs) -> bool:
    """Can games between these agents (specs) be played by the driver: is any of them a best-first
    agent with a network, and every other one either such an agent, one without a network, or an
    outside engine (one process per game in flight)?"""
    batched = False
    for spec in specs:
        name, opts = parse_agent(spec)
        if name in ENGINE_KINDS:         # one engine per game in flight (a pool of processes)
            continue
        if not opts.get("net"):
            continue
        if name not in ("minimax", "minibal_n", "minibal_plus", "minibal_swing", "descent"):
            return False
        batched = True
    return batched


def fork(proto, table_mb: float | None = None):
    """A new agent for one game in flight: a copy of the best-first agent ``proto`` that shares its
    network (not loaded again) and has its own search, its table capped at ``table_mb`` megabytes
    (when smaller than the agent's own cap)."""
    agent = copy.copy(proto)
    agent.opts = dict(proto.opts)
    if table_mb is not None and (agent.opts.get("max_mb") is None or agent.opts["max_mb"] > table_mb):
        agent.opts["max_mb"] = table_mb
    agent.reset()                        # its own search, the prototype's network
    return agent


class _Seat:
    """How to make a game's agent for one side: a fork of a prototype that shares its network
    (batched), a free engine of the pool (an outside engine), or a new agent from the spec (no
    network: cheap)."""

    def __init__(self, proto, spec: str, game: str, table_mb: float, make_agent, free=None):
        self.proto, self.spec, self.game, self.table_mb = proto, spec, game, table_mb
        self.make_agent = make_agent
        self.batched = proto is not None and steppable(proto)
        self.free = free                 # outside engines: the pool's free agents of this spec

    def new(self):
        if self.free is not None:
            return self.free.pop() if self.free else self.make_agent(self.spec, self.game)
        if not self.batched:
            return self.make_agent(self.spec, self.game)
        return fork(self.proto, self.table_mb)

    def release(self, agent) -> None:
        """A game is over: an engine goes back to the pool (its next game resets it)."""
        if self.free is not None:
            self.free.append(agent)


def close_engines(engines: dict) -> None:
    """Close the engines of a pool (``run_batched``'s ``engines``) and empty it."""
    for free in engines.values():
        while free:
            free.pop().close()
    engines.clear()


def _released(co, players):
    """The game coroutine ``co``; when it ends (or is closed), its players go back to their seats."""
    try:
        return (yield from co)
    finally:
        for seat, agent in players:
            seat.release(agent)


def move(agent, state, batch: bool = True):
    """Choose ``agent``'s move in ``state``, as a generator for ``yield from``: with ``batch`` and a
    best-first agent with a network, its search is begun here and the generator yields the agent
    whenever the search waits for the driver (``drive``) to step it; any other agent (or
    ``batch=False``) chooses at once, never yielding. Returns ``(action, seconds)``: a stepped
    move's seconds are its search's clock (its own steps plus its share of the network calls)."""
    if batch and steppable(agent):
        before = agent.search.seconds_used
        if agent.begin_search(state):
            yield agent
        t0 = time.perf_counter()
        action = agent.end_search(state)
        return action, agent.search.seconds_used - before + time.perf_counter() - t0
    t0 = time.perf_counter()
    action = agent.choose(state)
    return action, time.perf_counter() - t0


def play(game, agent_a, agent_b, index: int, seed: int, a_first=None, opening_plies: int = 0,
         opening=None, batch: bool = True):
    """One game of a match as a coroutine, ``descent.match.play_game``'s rules and bookkeeping (that
    function runs it with ``batch=False``): agent A moves first when ``index`` is even (or as
    ``a_first`` says); the first ``opening_plies`` plies are uniformly random (seeded) unless
    ``opening`` (moves in the game's notation) is given. It yields a batched agent whenever its
    search is to be stepped (``move``) and returns the ``GameRecord``. An outside engine that fails
    (``EngineError``) aborts the game: the record has ``aborted`` set and no result."""
    state = games.load(game).new_state()
    if a_first is None:
        a_first = index % 2 == 0
    agent_a.reset(game_seed(seed, index))
    agent_b.reset(game_seed(seed, index) + 17)
    seats = (agent_a, agent_b) if a_first else (agent_b, agent_a)
    rec = GameRecord(index, a_first)
    notes: dict[str, ProofNote] = {}       # when the game was decided, per best-first seat
    rng = random.Random(game_seed(seed, index) + 31)
    for text in opening or ():
        rec.moves.append(text)
        state.push(state.parse_move(text))
    while not opening and opening_plies > 0 and not state.is_game_over() and state.ply < opening_plies:
        action = rng.choice(state.legal_actions_list())
        rec.moves.append(state.move_to_str(action))
        state.push(action)
    while not state.is_game_over():
        agent = seats[state.to_move]
        agent.last_move = None
        try:
            action, dt = yield from move(agent, state, batch)
        except EngineError as exc:          # an outside engine failed: the game is aborted
            rec.aborted = str(exc)
            rec.plies = state.ply
            return rec
        note = getattr(agent, "last_move", None) or {}
        short, full = int(bool(note.get("cut_short"))), int(bool(note.get("memory_full")))
        if agent is agent_a:
            rec.seconds_a += dt
            rec.short_a += short
            rec.full_a += full
        else:
            rec.seconds_b += dt
            rec.short_b += short
            rec.full_b += full
        proof = root_proof(getattr(agent, "search", None), state, action)
        if proof is not None:
            seat = "a" if agent is agent_a else "b"
            notes.setdefault(seat, ProofNote()).note(state.ply, *proof)
        rec.moves.append(state.move_to_str(action))
        state.push(action)
    rec.proofs = {seat: n.as_dict() for seat, n in sorted(notes.items())}
    o = state.outcome()
    assert o is not None              # the loop above ends only when the game is over
    rec.result, rec.score, rec.plies = o.binary, o.score, state.ply
    return rec


def run_one(co):
    """Run a coroutine that never yields (``play(..., batch=False)``) and return its result."""
    try:
        co.send(None)
    except StopIteration as stop:
        return stop.value
    co.close()
    raise RuntimeError("run_one: the coroutine waited for a driver (use drive)")


def _network_key(agent):
    """Which network an agent's values come from: its checkpoint (``net=PATH`` loaded by
    ``descent.networks``: agents of one file share values), else its evaluator function."""
    net, inf = agent.opts.get("net"), agent.opts.get("_inference")
    if net and inf is not None:
        return ("net", str(Path(net).resolve()), type(inf).__name__)
    return ("fn", id(agent.values))


class _Game(PyWalker):
    """One game coroutine in flight, a walker of the batcher (``search_ext.batcher``): a step
    runs the game until its current search waits for values or the game is over."""
    __slots__ = ("key", "co", "agent", "ev", "result")
    agent: Any             # the best-first agent whose search is stepped, None between searches
    ev: Any                # its network's evaluation (search_ext.batcher.Evaluation)

    def __init__(self, key, co):
        self.key, self.co, self.agent, self.ev, self.result = key, co, None, None, None

    def step(self, batcher) -> bool:
        while True:
            if self.agent is None:
                try:
                    agent = self.co.send(None)
                except StopIteration as stop:
                    self.co, self.result = None, stop.value
                    return False
                self.agent = agent
                self.ev = batcher.evaluation((_network_key(agent), agent.game.spec), agent.values,
                                             agent.game.planes_shape, agent.game.branching)
            ev = self.ev
            n = self.agent.search.step(ev.buf, ev.n)
            if n > 0:
                ev.claim(self, n)
                return True
            self.agent = None                 # the search is over: the game plays its move

    def supply(self, values, offset: int, seconds: float) -> None:
        search = self.agent.search
        search.supply(values, offset)
        search.search_charge(seconds)


def drive(jobs, games_in_flight: int = DEFAULT_GAMES_IN_FLIGHT, stats: dict | None = None,
          cache_states: int = DEFAULT_CACHE_STATES):
    """Run coroutines ``games_in_flight`` at a time, one network call per network and round across
    them (``search_ext.batcher.Batcher``); yield ``(key, result)`` as each ends, in completion
    order. ``jobs``: an iterable of ``(key, start)``, ``start()`` making the coroutine when its
    turn comes (a game written with ``yield from move(agent, state)``: it yields a batched agent
    whose search is to be stepped). ``stats`` (a dict), if given, receives ``rounds``, ``calls``,
    ``states`` (network calls and the states they valued) and ``cached`` (states whose value came
    from the cache). ``cache_states``: the most values kept per network (0: no cache)."""
    batcher = Batcher(games_in_flight, cache_states)
    jobs = iter(jobs)

    def start():
        job = next(jobs, None)
        return None if job is None else _Game(job[0], job[1]())

    def note():
        if stats is not None:
            stats.update(rounds=batcher.rounds, calls=batcher.calls, states=batcher.states,
                         cached=batcher.cached)

    for game in batcher.play(start, before_round=note):
        assert isinstance(game, _Game)          # the walkers are the games start() made
        note()
        yield game.key, game.result
    note()


def run_batched(tasks, games_in_flight: int = DEFAULT_GAMES_IN_FLIGHT,
                memory_mb: float = DEFAULT_MEMORY_MB, stats: dict | None = None, make_agent=None,
                cache_states: int = DEFAULT_CACHE_STATES, engines: dict | None = None):
    """Play the tasks (``descent.match.play_task``'s plain data: game, agent_a, agent_b, index, seed,
    a_first, opening_plies or opening), ``games_in_flight`` at a time, one network call per network
    and round; yield ``(task, record)`` in completion order. ``stats`` and ``cache_states``: as for
    ``drive``. ``make_agent(spec, game)``: how agents are built (default
    ``descent.networks.make_agent``). ``engines``: the pool of outside engines,
    ``{(spec, game): [free agents]}``, kept for the caller's next call (default: a pool of this
    call's own, closed when it ends)."""
    if make_agent is None:
        make_agent = networks.make_agent
    own_pool = engines is None
    pool: dict = {} if engines is None else engines
    try:
        yield from _run_batched(tasks, games_in_flight, memory_mb, stats, make_agent, cache_states, pool)
    finally:
        if own_pool:
            close_engines(pool)


def _run_batched(tasks, games_in_flight, memory_mb, stats, make_agent, cache_states, engines):
    tasks = list(tasks)
    if games_in_flight < 1:
        raise ValueError(f"games_in_flight must be >= 1, got {games_in_flight}")
    in_flight = max(1, min(games_in_flight, len(tasks)))
    table_mb = table_share(memory_mb, 2 * in_flight)
    seats: dict = {}

    def seat(spec, game, side):
        key = (spec, game, side)
        if key not in seats:
            if is_engine_spec(spec):
                seats[key] = _Seat(None, spec, game, table_mb, make_agent, engines.setdefault((spec, game), []))
            else:
                seats[key] = _Seat(make_agent(spec, game), spec, game, table_mb, make_agent)
        return seats[key]

    def start(task):
        sa, sb = seat(task["agent_a"], task["game"], "a"), seat(task["agent_b"], task["game"], "b")
        a = sa.new()
        try:
            b = sb.new()
        except BaseException:
            sa.release(a)
            raise
        return _released(play(task["game"], a, b, task["index"], task["seed"], task.get("a_first"),
                              task.get("opening_plies", 0), task.get("opening")), ((sa, a), (sb, b)))

    yield from drive(((t, lambda t=t: start(t)) for t in tasks), in_flight, stats, cache_states)


def table_share(memory_mb: float, tables: int) -> float:
    """Each table's cap when ``tables`` tables share ``memory_mb`` megabytes."""
    return max(1e-3, memory_mb / max(1, tables))


def _play_chunk(args):
    tasks, games_in_flight, memory_mb = args
    return list(run_batched(tasks, games_in_flight, memory_mb))


def run_tasks_batched(tasks, workers: int = 1, games_in_flight: int = DEFAULT_GAMES_IN_FLIGHT,
                      memory_mb: float = DEFAULT_MEMORY_MB):
    """``descent.match.run_tasks`` through the driver: yield ``(task, record)`` in completion order.
    With ``workers`` > 1, spawned processes each play chunks of ``games_in_flight`` tasks (a chunk's
    records come back together: a killed run loses at most the games in flight)."""
    tasks = list(tasks)
    if workers <= 1 or len(tasks) <= games_in_flight:
        yield from run_batched(tasks, games_in_flight, memory_mb)
        return
    chunks = [(tasks[i:i + games_in_flight], games_in_flight, memory_mb)
              for i in range(0, len(tasks), games_in_flight)]
    with spawn_pool(min(workers, len(chunks))) as pool:
        for done in pool.imap_unordered(_play_chunk, chunks):
            yield from done
