"""Games written in Python against a compiled game of a similar size: self-play speed and the
bridge's cost, in one run.

Three games, measured interleaved in one process, each figure the median of ``--repeats`` runs:

* ``examples.connect_four:ConnectFour``: the worked example, a game in Python (7 columns x 6 rows),
  through the compiled adapter ``games.python_game``;
* ``openspiel:connect_four``: OpenSpiel's Connect Four through the same adapter (``games.openspiel``
  wraps a ``pyspiel`` state in the protocol);
* ``reversi(size=6)``: a compiled engine of a similar size (36 cells, 5-10 legal moves, about 32
  plies a game; Connect Four: 42 cells, 7 moves, up to 42 plies).

What is measured:

* **self-play positions per CPU-second**: ``search_ext.selfplay.SelfPlayPool`` (the trainer's self-play)
  plays ``--games`` seeded games, ``--in-flight`` at once, Descent at ``--iterations`` a move; a
  position is a ply played; CPU time is the process's. Two evaluators: ``uniform`` (every state
  valued 0: the search and the game alone, what the game's speed bounds) and ``network`` (an
  untrained network of the default architecture, ``training.architecture.Architecture()``, through
  ONNX Runtime on one thread: the cost of self-play as training pays it);
* **the bridge per call**: perft (the leaf count, bulk-counted at the last ply) through the adapter
  (``games._state.perft``, the compiled recursion calling the game's Python methods) against the same
  recursion written in Python straight on the game object (``legal_actions``/``apply``/``undo`` for the
  example; ``legal_actions``/``child`` for OpenSpiel, which has no undo for Connect Four), and the
  compiled perft of reversi(size=6); the bridge's cost per move is (adapter - direct) seconds over
  the moves applied (each an ``apply``, an ``undo`` and the child's ``legal_actions`` through the
  adapter);
* **random games**: ``games._state.random_games`` through the adapter against a Python loop on the
  game object, moves per second.

Usage: python -m bench.bench_python_games [--repeats 5] [--games 8] [--iterations 30] [--json OUT]
Needs OpenSpiel (``pip install -e '.[openspiel]'``) and ONNX Runtime; writes
bench/results_python_games.json.
"""
from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from typing import Any

import numpy as np

import games
from bench.harness import BENCH, machine, write_results
from games._state import perft, random_games
from search_ext.selfplay import SelfPlayPool

PY = "examples.connect_four:ConnectFour"
OS = "openspiel:connect_four"
COMPILED = "reversi(size=6)"
SPECS = (PY, OS, COMPILED)
PERFT_DEPTH = {PY: 6, OS: 5, COMPILED: 7}


def selfplay_rate(info, values, n_games: int, in_flight: int, iterations: int) -> dict:
    """Seeded self-play games: positions (plies) and evaluated states per CPU-second."""
    seeds = list(range(n_games, 0, -1))
    out: list = []
    pool = SelfPlayPool(info, values, iterations=iterations, games_in_flight=in_flight)
    c0 = time.process_time()
    pool.run(lambda: (seeds.pop(), 0.3, -1.0, len(seeds)) if seeds else None, out.append)
    cpu = time.process_time() - c0
    plies = sum(int(g["plies"]) for g in out)
    return {"cpu_seconds": cpu, "positions": plies, "positions_per_cpu_s": plies / cpu,
            "states_per_cpu_s": pool.eval_states / cpu, "games": len(out)}


def _py_perft(g, depth: int) -> int:
    legal = g.legal_actions()
    if depth == 1:
        return len(legal)
    total = 0
    for a in legal:
        g.apply(a)
        total += _py_perft(g, depth - 1)
        g.undo(a)
    return total


def _spiel_perft(s, depth: int) -> int:
    legal = s.legal_actions() if not s.is_terminal() else []
    if depth == 1:
        return len(legal)
    return sum(_spiel_perft(s.child(a), depth - 1) for a in legal)


def _spiel_start(info) -> Any:
    """The pyspiel state inside the adapter's initial state of an OpenSpiel game."""
    adapter: Any = info.new_state()
    return adapter.game_object._state


def _direct_perft(spec: str, depth: int) -> int:
    info = games.load(spec)
    if spec == OS:
        return _spiel_perft(_spiel_start(info), depth)
    return _py_perft(info.definition.game_class(**info.params), depth)


def _moves_applied(spec: str, depth: int) -> int:
    """Moves a bulk-counted perft(depth) applies: the leaves of the trees of depth 1 .. depth-1."""
    s = games.load(spec).new_state()
    return sum(perft(s, k) for k in range(1, depth))


def timed(fn, *args) -> tuple[float, Any]:
    c0 = time.process_time()
    out = fn(*args)
    return time.process_time() - c0, out


def _py_random_games(spec: str, n: int, seed: int) -> int:
    """Uniformly random games in Python on the game object; returns the moves played."""
    info = games.load(spec)
    rng = random.Random(seed)
    moves = 0
    for _ in range(n):
        if spec == OS:
            s = _spiel_start(info).get_game().new_initial_state()
            while not s.is_terminal():
                s.apply_action(rng.choice(s.legal_actions()))
                moves += 1
        else:
            g = info.definition.game_class(**info.params)
            while not g.is_terminal():
                g.apply(rng.choice(g.legal_actions()))
                moves += 1
    return moves


def _network(info):
    from training.architecture import Architecture  # lazy: TensorFlow, only for the network runs
    from training.inference import make_inference  # lazy: TensorFlow, only for the network runs
    from training.network import build_model, configure_threads  # lazy: TensorFlow
    configure_threads(1)
    return make_inference(build_model(info.planes_shape, Architecture(), seed=0), "onnx")


def _median_of(samples: list[dict], key: str) -> float:
    return statistics.median(s[key] for s in samples)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--games", type=int, default=8, help="self-play games per run")
    ap.add_argument("--in-flight", type=int, default=8)
    ap.add_argument("--iterations", type=int, default=30, help="Descent iterations a move")
    ap.add_argument("--random-games", type=int, default=1000, help="random games per run")
    ap.add_argument("--no-network", action="store_true", help="the uniform evaluator only")
    ap.add_argument("--json", default=str(BENCH / "results_python_games.json"))
    a = ap.parse_args(argv)
    infos = {spec: games.load(spec) for spec in SPECS}
    evaluators = {"uniform": {spec: (lambda b: np.zeros(len(b), dtype=np.float32)) for spec in SPECS}}
    if not a.no_network:
        evaluators["network"] = {spec: _network(infos[spec]) for spec in SPECS}
    selfplay: dict = {ev: {spec: [] for spec in SPECS} for ev in evaluators}
    bridge: dict = {spec: {"adapter": [], "direct": []} for spec in SPECS}
    walks: dict = {spec: {"adapter": [], "direct": []} for spec in SPECS}
    leaves = {spec: perft(infos[spec].new_state(), PERFT_DEPTH[spec]) for spec in SPECS}
    applied = {spec: _moves_applied(spec, PERFT_DEPTH[spec]) for spec in SPECS}
    for spec in (PY, OS):
        assert _direct_perft(spec, 4) == perft(infos[spec].new_state(), 4), spec
    for rep in range(a.repeats):
        for spec in SPECS:                  # interleaved: each repeat runs every game once
            for ev, fns in evaluators.items():
                selfplay[ev][spec].append(selfplay_rate(infos[spec], fns[spec], a.games, a.in_flight,
                                                        a.iterations))
            d = PERFT_DEPTH[spec]
            t, n = timed(perft, infos[spec].new_state(), d)
            bridge[spec]["adapter"].append(t)
            t, r = timed(random_games, infos[spec].new_state(), a.random_games, 1 + rep)
            walks[spec]["adapter"].append(int(r[1].sum()) / t)
            if spec != COMPILED:
                t, m = timed(_direct_perft, spec, d)
                assert m == n == leaves[spec], (spec, m, n)
                bridge[spec]["direct"].append(t)
                t, moves = timed(_py_random_games, spec, a.random_games, 1 + rep)
                walks[spec]["direct"].append(moves / t)
        print(f"repeat {rep + 1}/{a.repeats} done", file=sys.stderr, flush=True)

    rows = {}
    for spec in SPECS:
        row: dict = {"perft_depth": PERFT_DEPTH[spec], "perft_leaves": leaves[spec],
                     "perft_moves_applied": applied[spec]}
        for ev in evaluators:
            row[f"selfplay_{ev}_positions_per_cpu_s"] = _median_of(selfplay[ev][spec], "positions_per_cpu_s")
            row[f"selfplay_{ev}_states_per_cpu_s"] = _median_of(selfplay[ev][spec], "states_per_cpu_s")
            row[f"selfplay_{ev}_positions_per_game"] = (statistics.mean(s["positions"] for s in selfplay[ev][spec])
                                                        / a.games)
        adapter = statistics.median(bridge[spec]["adapter"])
        row["perft_leaves_per_s"] = leaves[spec] / adapter
        row["random_moves_per_s"] = statistics.median(walks[spec]["adapter"])
        if spec != COMPILED:
            direct = statistics.median(bridge[spec]["direct"])
            row["direct_perft_leaves_per_s"] = leaves[spec] / direct
            row["direct_random_moves_per_s"] = statistics.median(walks[spec]["direct"])
            row["bridge_us_per_move"] = 1e6 * (adapter - direct) / applied[spec]
            row["adapter_us_per_move"] = 1e6 * adapter / applied[spec]
            row["direct_us_per_move"] = 1e6 * direct / applied[spec]
        rows[spec] = row
    ratios = {}
    for ev in evaluators:
        key = f"selfplay_{ev}_positions_per_cpu_s"
        for spec in (PY, OS):
            ratios[f"{COMPILED} / {spec}, self-play {ev}"] = rows[COMPILED][key] / rows[spec][key]
    data = {"machine": machine(), "repeats": a.repeats, "games": a.games, "in_flight": a.in_flight,
            "iterations": a.iterations, "random_games": a.random_games, "results": rows, "ratios": ratios,
            "samples": {"selfplay": selfplay, "perft_cpu_s": bridge, "random_moves_per_s": walks}}
    for spec, row in rows.items():
        print(spec)
        for k, v in row.items():
            print(f"  {k}: {v:,.3f}" if isinstance(v, float) else f"  {k}: {v}")
    for k, v in ratios.items():
        print(f"{k}: {v:.2f}x")
    print(f"wrote {write_results(a.json, data)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
