"""Plain MCTS given the CPU of a networked player: the Minibal paper's Table 4 at equal time.

The paper plays its balanced players against plain MCTS (random playouts) at the same search time
per move (1 s against 1 s). Here budgets are iterations, which are reproducible; the opponent's
iterations are calibrated to time once and recorded, so every game of the experiment is played
with a fixed, known budget:

1. the *reference* player (e.g. ``minimax:iterations=10``, the balanced players' 1x point) plays
   ``games`` games against itself with each high-pool network, from seeded random openings, one
   search at a time (no batching: the CPU a player alone spends on a move), and the process CPU
   time of each move is measured (``time.process_time``: all threads, the network's included);
2. plain MCTS searches ``mcts_iterations`` iterations from each of (at most ``positions``) positions
   of those games, its CPU time measured the same way;
3. the opponent's budget is the iterations MCTS runs in the reference's median CPU per move:
   ``round(median seconds per move x MCTS iterations per second)`` (at least 1).

The record (``calibrations/equal-cpu-<safe spec>.json`` in the run directory; JSON, written
atomically) holds every figure behind the budget, so a reader can check it, and a rerun reuses it
(the matches already played keep their meaning). ``descent experiment`` uses it for an opponent
``kind = "mcts"`` whose budget is ``equal-cpu=SPEC``.
"""
from __future__ import annotations

import datetime
import os
import platform
import statistics
import time
from pathlib import Path

import games
from games import validate as v
from search_ext.agents import AgentSpecError, parse_agent
from descent.match import make_opening
from training import layout
from training.fileio import write_json

PREFIX = "equal-cpu="
RECORD = v.Record({"game": v.Str(256, empty=False), "reference": v.Str(1024, empty=False),
                   "mcts_iterations": v.Int(1, v.MAX_COUNT)})


def is_equal_cpu(budget: str) -> bool:
    return budget.strip().startswith(PREFIX)


def reference_of(budget: str) -> str:
    """``equal-cpu=minimax:iterations=10`` -> ``minimax:iterations=10``."""
    return budget.strip()[len(PREFIX):].strip()


def record_path(run_dir, reference: str) -> Path:
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in reference.replace("=", "-"))
    return layout.calibrations_dir(run_dir) / f"equal-cpu-{safe}.json"


def _moves_cpu(game: str, spec: str, opening: list[str], max_moves: int, seed: int):
    """One game of ``spec`` against itself from ``opening``: each move's CPU seconds and the
    positions (move lists) it was chosen in."""
    from descent.networks import make_agent  # lazy: the networks' runtime, only when measuring
    info = games.load(game)
    agent = make_agent(spec, info)
    agent.reset(seed)
    state = info.new_state()
    moves: list[str] = []
    for m in opening:
        a = state.parse_move(m)
        state.push(a)
        moves.append(m)
    cpu: list[float] = []
    positions: list[list[str]] = []
    while not state.is_game_over() and len(cpu) < max_moves:
        positions.append(list(moves))
        t0 = time.process_time()
        a = agent.choose(state)
        cpu.append(time.process_time() - t0)
        moves.append(state.move_to_str(a))
        state.push(a)
    return cpu, positions


def measure(game: str, reference: str, nets: list[str], games_per_net: int = 2, opening_plies: int = 4,
            positions: int = 64, mcts_iterations: int = 1000, max_moves: int = 80, seed: int = 0,
            echo=print) -> dict:
    """Measure the reference's CPU per move and plain MCTS's iterations per CPU-second on the
    same positions (see the module's text); returns the record."""
    from descent.networks import make_agent  # lazy: the networks' runtime, only when measuring
    game = games.load(game).spec
    per_move: list[float] = []
    pos: list[list[str]] = []
    for i, net in enumerate(nets):
        for j in range(games_per_net):
            opening = make_opening(game, opening_plies, f"{seed}|equal-cpu|{i}|{j}")
            spec = reference + ("," if ":" in reference else ":") + f"net={net}"
            if i == 0 and j == 0:
                _moves_cpu(game, spec, opening, 2, seed)       # warm up: load the runtime once
            cpu, p = _moves_cpu(game, spec, opening, max_moves, seed + j)
            per_move += cpu
            pos += p
            echo(f"[equal-cpu] {game}: {reference} with {Path(net).parent.name}/{Path(net).name}, game {j + 1}: "
                 f"{len(cpu)} moves, median {1000 * statistics.median(cpu):.2f} ms CPU a move")
    step = max(1, len(pos) // positions)
    chosen = pos[::step][:positions]
    info = games.load(game)
    mcts = make_agent(f"mcts:iterations={mcts_iterations},seed={seed}", info)
    mcts_cpu = 0.0
    for moves in chosen:
        state = info.new_state()
        for m in moves:
            state.push(state.parse_move(m))
        mcts.reset(seed)
        t0 = time.process_time()
        mcts.choose(state)
        mcts_cpu += time.process_time() - t0
    rate = mcts_iterations * len(chosen) / max(mcts_cpu, 1e-9)
    med = statistics.median(per_move)
    n = max(1, int(round(med * rate)))
    try:
        load = os.getloadavg()[0]
    except OSError:
        load = None
    rec = {"game": game, "reference": reference, "mcts_iterations": n,
           "reference_cpu_per_move_median": med, "reference_cpu_per_move_mean": sum(per_move) / len(per_move),
           "reference_moves": len(per_move), "networks": [str(x) for x in nets],
           "games_per_network": games_per_net, "opening_plies": opening_plies,
           "mcts_measured_iterations": mcts_iterations, "mcts_positions": len(chosen),
           "mcts_cpu_seconds": mcts_cpu, "mcts_iterations_per_cpu_second": rate,
           "measured_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
           "machine": {"cpus": os.cpu_count(), "load_1min": load, "processor": platform.processor() or
                       platform.machine()}}
    echo(f"[equal-cpu] {game}: {reference} spends a median {1000 * med:.2f} ms CPU a move over "
         f"{len(per_move)} moves; plain MCTS runs {rate:.0f} iterations a CPU-second "
         f"({len(chosen)} positions) -> mcts:iterations={n}")
    return rec


def equal_cpu_budget(run_dir, game: str, budget: str, nets: list[str], seed: int = 0, echo=print,
                     error: type = ValueError) -> tuple[str, dict]:
    """The opponent budget ``iterations=N`` for ``equal-cpu=SPEC`` in this run: read from its
    record, or measured once and recorded. Returns (budget, record)."""
    reference = reference_of(budget)
    try:
        name, opts = parse_agent(reference)
    except AgentSpecError as exc:
        raise error(f"opponent budget {budget!r}: {exc}") from None
    if not opts.get("iterations") or "net" in reference:
        raise error(f"opponent budget {budget!r}: the reference must be an algorithm with an iteration "
                    f"budget and no net= (each high network is used), e.g. equal-cpu=minimax:iterations=10")
    path = record_path(run_dir, reference)
    if path.exists():
        rec = v.load_json(path, RECORD, error, f"equal-CPU record {path}")
        if rec["game"] != games.load(game).spec or rec["reference"] != reference:
            raise error(f"{path}: a record of {rec['reference']} in {rec['game']}, not of {reference} in {game}")
        return f"iterations={rec['mcts_iterations']}", rec
    rec = measure(game, reference, nets, seed=seed, echo=echo)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json(path, rec)
    return f"iterations={rec['mcts_iterations']}", rec
