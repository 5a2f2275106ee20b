"""Matches between two agents: seats alternate, games can run in worker processes.

Each record counts, per agent, the moves whose search was cut short (it ran fewer iterations than
its budget because its table was full: ``short_a``/``short_b``) and the moves searched with a full
table (``full_a``/``full_b``), so that a weakened search is reported, never hidden.

A game in which an outside engine fails (``EngineError``: it exits, times out or answers an illegal
move) is returned with ``aborted`` set to the reason and no result; callers never score it.

Game i (from 0) is played with agent A first when i is even and agent B first when it is odd; each
game's seed is derived from the match seed and i, so results do not depend on the number of workers.
"""
from __future__ import annotations

import games
from descent import batched          # games with networks: many in flight, batched evaluation
from descent.gamerecord import GameRecord, game_seed  # noqa: F401  (re-exported: descent.match.GameRecord)
from descent.networks import make_agent
from training.pool import spawn_pool
from search_ext.agents import parse_agent
import random
from descent import distributed


def make_opening(game: str, plies: int, key: str) -> list[str]:
    """``plies`` uniformly random moves from the start, seeded by ``key`` (a string: reproducible
    across runs and machines); never a finished game (shorter when every try ends the game)."""
    info = games.load(game)
    rng = random.Random(f"opening|{game}|{key}")
    for n in range(plies, 0, -1):
        for _ in range(50):
            state = info.new_state()
            moves: list[str] = []
            while len(moves) < n and not state.is_game_over():
                a = rng.choice(state.legal_actions_list())
                moves.append(state.move_to_str(a))
                state.push(a)
            if not state.is_game_over():
                return moves
    return []


def play_game(game, agent_a, agent_b, index: int, seed: int, a_first: bool | None = None,
              opening_plies: int = 0, opening: list | None = None) -> GameRecord:
    """Play one game; agent A moves first when ``index`` is even (or as ``a_first`` says). The
    first ``opening_plies`` plies are uniformly random (seeded), for diversity between games;
    ``opening`` (moves in the game's notation) is played first instead when given (the tournament
    gives both seats of a pairing the same one). The game is ``descent.batched.play`` (the one
    game coroutine, which the batched driver runs many at a time) run alone, each move chosen at
    once."""
    return batched.run_one(batched.play(game, agent_a, agent_b, index, seed, a_first, opening_plies,
                                        opening, batch=False))


_WORKER: dict = {}


def _worker_init(game, spec_a, spec_b):
    _WORKER["agents"] = (make_agent(spec_a, game), make_agent(spec_b, game))
    _WORKER["game"] = game


def _worker_play(args):
    index, seed = args
    a, b = _WORKER["agents"]
    return play_game(_WORKER["game"], a, b, index, seed)


_AGENTS: dict = {}


def _agent(spec: str, game: str, side: str):
    key = (spec, game, side)
    if key not in _AGENTS:
        _AGENTS[key] = make_agent(spec, game)
    return _AGENTS[key]


def play_task(task: dict) -> tuple[dict, GameRecord]:
    """Play one match described by plain data: game, agent_a, agent_b, index, seed, a_first,
    opening_plies or opening (agents are built once per process and reused)."""
    a = _agent(task["agent_a"], task["game"], "a")
    b = _agent(task["agent_b"], task["game"], "b")
    rec = play_game(task["game"], a, b, task["index"], task["seed"], task["a_first"],
                    task.get("opening_plies", 0), task.get("opening"))
    return task, rec


def run_tasks(tasks: list[dict], workers: int = 1, ray_address: str | None = None):
    """Yield ``(task, record)`` for every task, in completion order (spawned worker processes, or
    Ray tasks when ``ray_address`` is given)."""
    if ray_address is not None:
        yield from distributed.run_tasks_ray(tasks, ray_address, play_task)
        return
    if batched.batchable({t[k] for t in tasks for k in ("agent_a", "agent_b")}):
        yield from batched.run_tasks_batched(tasks, workers)
        return
    if workers <= 1 or len(tasks) <= 1:
        for t in tasks:
            yield play_task(t)
        return
    with spawn_pool(min(workers, len(tasks))) as pool:
        yield from pool.imap_unordered(play_task, tasks)


def run_match(game: str, spec_a: str, spec_b: str, n_games: int, workers: int = 1, seed: int = 0,
              progress: bool = True, ray_address: str | None = None):
    """Yield ``GameRecord``s (in completion order) of ``n_games`` games between A and B."""
    parse_agent(spec_a)
    parse_agent(spec_b)
    games.load(game)
    if ray_address is not None:
        tasks = [{"game": game, "agent_a": spec_a, "agent_b": spec_b, "index": i, "seed": seed,
                  "a_first": i % 2 == 0} for i in range(n_games)]
        for _, rec in run_tasks(tasks, workers, ray_address):
            yield rec
        return
    if batched.batchable([spec_a, spec_b]):
        tasks = [{"game": game, "agent_a": spec_a, "agent_b": spec_b, "index": i, "seed": seed,
                  "a_first": i % 2 == 0} for i in range(n_games)]
        for _, rec in batched.run_tasks_batched(tasks, workers):
            yield rec
        return
    if workers <= 1:
        a, b = make_agent(spec_a, game), make_agent(spec_b, game)
        for i in range(n_games):
            yield play_game(game, a, b, i, seed)
        return
    with spawn_pool(workers, initializer=_worker_init, initargs=(game, spec_a, spec_b)) as pool:
        yield from pool.imap_unordered(_worker_play, [(i, seed) for i in range(n_games)])
