"""Self-play at each game's default config, as training runs it.

For each game: the default config (``configs/<game>.toml``), an untrained network of its
architecture, the inference backend and ``games_in_flight`` training would choose on the CPU, and
the ``SelfPlayPool`` built as ``MemberTrainer._play`` builds it (``--memory-mb``: with the member's
memory cap, see ``training.memory.selfplay_caps``). Plays until the first game ends or ``--cap``
seconds pass, sampling the pool's ``progress_info()`` every 64 rounds, and records: the time to the
first finished game (or ``None`` with ``timed_out``), its plies, the games in flight, search
iterations and plies per second, the tables' states and bytes, and the process's peak RSS. One
game per child process (so ``ru_maxrss`` is the game's); results merged into ``--json``.

    PYTHONPATH=. python -m bench.bench_defaults chess xiangqi --cap 120
    PYTHONPATH=. python -m bench.bench_defaults --all --cap 600 --json bench/results_defaults.json
    PYTHONPATH=. python -m bench.bench_defaults chess --cap 120 --label before --config-dir old/
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

GAMES = ["tic_tac_toe", "tsoro_yematatu", "tapatan", "five_field_kono", "alquerque", "reversi",
         "breakthrough", "lines_of_action", "havannah", "outer_open_gomoku", "connect6",
         "international_draughts", "xiangqi", "chess"]


def relative(path) -> str:
    """A path as the results file may hold it: inside the repository, or only its last two parts."""
    path = Path(path).resolve()
    root = Path(__file__).resolve().parents[1]
    return str(path.relative_to(root)) if path.is_relative_to(root) else "/".join(path.parts[-2:])


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2 ** 20


def measure(game: str, cap: float, config_dir: str | None, memory_mb: float | None,
            iterations: int | None = None, in_flight: int | None = None) -> dict:
    import games
    from descent.config import load_config, default_config_path
    from search_ext.descent_core import BYTES_PER_STATE
    from search_ext.selfplay import SelfPlayPool
    from training import import_tensorflow
    from training.architecture import Architecture
    from training.inference import default_games_in_flight, make_inference
    from training.network import build_model, configure_threads
    tf = import_tensorflow()
    configure_threads(1)
    path = Path(config_dir) / f"{game}.toml" if config_dir else default_config_path(game)
    cfg = load_config(path)
    info = games.load(cfg["game"]["spec"])
    model = build_model(info.planes_shape, Architecture.from_meta(cfg["network"]), seed=0)
    inference = make_inference(model, "auto", "cpu", threads=1)
    sp = cfg["selfplay"]
    if iterations:
        sp = {**sp, "iterations": iterations, "time": 0.0}
    in_flight = (in_flight or cfg["run"]["games_in_flight"]
                 or default_games_in_flight(info.branching, "cpu"))
    kw = dict(iterations=sp["iterations"] if sp["time"] <= 0 else 0, seconds=sp["time"],
              games_in_flight=in_flight,
              max_nodes=max(16, min(sp["max_nodes"], int(sp["max_mb"] * 2 ** 20 / BYTES_PER_STATE))))
    if memory_mb is not None:             # the member's cap, split as MemberTrainer._play does
        from training.memory import network_bytes, selfplay_caps
        caps = selfplay_caps(info, in_flight, memory_mb, network_bytes(model), kw["max_nodes"])
        in_flight = kw["games_in_flight"] = caps["games_in_flight"]
        kw["max_nodes"] = max(16, min(kw["max_nodes"], caps["max_nodes"]))
        kw["max_example_bytes"] = caps["max_example_bytes"]
    pool = SelfPlayPool(info, inference, **kw)
    samples, first = [], {}
    t0 = time.perf_counter()
    rss0 = rss_mb()
    started = [0]

    def new_game():
        started[0] += 1
        return (started[0], 0.05, -1.0, started[0])

    def on_game(g):
        if not first:
            first.update(seconds=time.perf_counter() - t0, plies=g["plies"],
                         examples=int(len(g["y"])), short_moves=g["short_moves"],
                         peak_nodes=g["peak_nodes"], iterations=g["iterations"],
                         dropped_harvests=g.get("dropped_harvests", 0))

    def progress(p):
        samples.append({"t": round(time.perf_counter() - t0, 2), "rss_mb": round(rss_mb(), 1), **p})

    last = {}

    def stop():
        last.update(pool.progress_info())      # the counts before the games in flight are dropped
        return bool(first) or time.perf_counter() - t0 > cap

    pool.run(new_game, on_game, stop=stop, progress=progress, progress_every=64)
    dt = time.perf_counter() - t0
    end = last
    peak_tables = max([s["table_bytes"] for s in samples] + [end["table_bytes"]])
    peak_mem = max([s["memory_bytes"] for s in samples] + [end["memory_bytes"]])
    return {"game": game, "spec": info.spec, "config": relative(path), "iterations": kw["iterations"],
            "games_in_flight": in_flight, "max_nodes": kw["max_nodes"],
            "compact_at": kw.get("compact_at", kw["max_nodes"] // 2),
            "memory_mb": memory_mb, "inference": inference.name, "cap_s": cap,
            "first_game_s": round(first["seconds"], 1) if first else None,
            "timed_out": not first, "first_game": first or None,
            "elapsed_s": round(dt, 1), "plies": end["plies"], "longest_game": end["longest_game"],
            "plies_per_s": round(end["plies"] / dt, 3),
            "iterations_per_s": round(end["iterations"] / dt, 1),
            "eval_states_per_s": round(end["eval_states"] / dt, 1),
            "peak_table_mb": round(peak_tables / 2 ** 20, 1),
            "peak_pool_mb": round(peak_mem / 2 ** 20, 1),
            "rss_start_mb": round(rss0, 1),
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
            "samples": samples[::max(1, len(samples) // 20)]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("games", nargs="*")
    ap.add_argument("--all", action="store_true")
    ap.add_argument("--cap", type=float, default=600.0, help="seconds to wait for the first game")
    ap.add_argument("--config-dir", default=None, help="configs from here (default: configs/)")
    ap.add_argument("--memory-mb", type=float, default=None, help="the member's memory cap")
    ap.add_argument("--iterations", type=int, default=None, help="override iterations per move")
    ap.add_argument("--in-flight", type=int, default=None, help="override games_in_flight")
    ap.add_argument("--label", default="after")
    ap.add_argument("--json", default=None, help="merge results into this file")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    todo = GAMES if a.all else a.games
    if a.child:
        print(json.dumps(measure(todo[0], a.cap, a.config_dir, a.memory_mb, a.iterations,
                                 a.in_flight)))
        return 0
    results = {}
    if a.json and Path(a.json).exists():
        results = json.loads(Path(a.json).read_text())
    for game in todo:
        cmd = [sys.executable, __file__, game, "--child", "--cap", str(a.cap)]
        if a.config_dir:
            cmd += ["--config-dir", a.config_dir]
        if a.memory_mb is not None:
            cmd += ["--memory-mb", str(a.memory_mb)]
        if a.iterations:
            cmd += ["--iterations", str(a.iterations)]
        if a.in_flight:
            cmd += ["--in-flight", str(a.in_flight)]
        out = subprocess.run(cmd, capture_output=True, text=True,
                             env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1]),
                                  "TF_CPP_MIN_LOG_LEVEL": "3"})
        if out.returncode != 0:
            print(f"{game}: failed\n{out.stderr[-2000:]}", file=sys.stderr)
            continue
        r = json.loads(out.stdout.strip().splitlines()[-1])
        short = {k: r[k] for k in ("game", "first_game_s", "plies", "games_in_flight", "iterations",
                                   "iterations_per_s", "plies_per_s", "peak_table_mb",
                                   "peak_pool_mb", "peak_rss_mb")}
        print(json.dumps(short), flush=True)
        results.setdefault(a.label, {})[game] = {**r, "command": " ".join(relative(x) if "/" in x else x for x in sys.argv)}
        if a.json:
            from training.fileio import write_json
            write_json(a.json, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
