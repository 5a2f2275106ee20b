"""Start-up of play and of an evaluation worker: a network loaded through Keras (the old path) against
a network read without TensorFlow (``training.network.read_network`` into ONNX Runtime).

Both paths exist in the same tree: "keras" replaces ``descent.networks.network_evaluator`` in the
child process by the loader it had before (``training.network.load_network``, which builds the Keras
model and so imports TensorFlow, then ``make_inference(model)``: ONNX Runtime over its weights),
"direct" is the code as it is. Every measurement is a fresh interpreter; the two paths alternate
within each repeat. Measured:

* ``first_board``: seconds from starting ``descent play 'reversi(size=6)'`` (the default level, no
  options but ``--plain``) to its first board on stdout (the ``to move`` line under it);
* ``first_computer_move``: the same with ``--seat second --iterations 10`` to the line announcing
  the computer's first move (the agent built and one search run);
* ``agent_one_move``: ``descent.make_agent("minimax:iterations=10,net=<shipped reversi 6x6>")`` and
  one move, seconds from the interpreter's start (the child's wall clock from before its imports
  plus the interpreter start measured by the parent) and the child's CPU seconds;
* ``worker_rss``: peak RSS (``ru_maxrss``) of a process that builds that agent and plays 10 plies
  with it (an evaluation worker's life, shortened).

Medians over the repeats; the ratio is keras / direct. Writes bench/results_play_startup.json:

  python -m bench.bench_play_startup [--repeats 7] [--json bench/results_play_startup.json]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

GAME = "reversi(size=6)"
NET = ROOT / "checkpoints" / "shipped" / "reversi_size-6" / "final.weights.h5"
AGENT = f"minimax:iterations=10,seed=1,net={NET}"
PATHS = ("keras", "direct")
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def use_keras_loader() -> None:
    """The loader ``descent.networks`` had before networks were read without TensorFlow."""
    import descent.networks as networks

    def network_evaluator(opts, game=None):
        inf = opts.get("_inference")
        if inf is None:
            from descent.shipped import check_network
            from training.inference import make_inference
            from training.network import load_network
            check_network(opts["net"])
            model, _ = load_network(opts["net"], game)
            inf = opts["_inference"] = make_inference(model)
        return inf.evaluator()
    networks.network_evaluator = network_evaluator


# ---- children ---------------------------------------------------------------------------------------

def child(kind: str, path: str, args: list[str]) -> None:
    t0 = time.perf_counter()
    if path == "keras":
        use_keras_loader()
    if kind == "cli":
        from descent.cli import cli
        cli(args, prog_name="descent")
        return
    import descent
    import games
    info = games.load(GAME)
    agent = descent.make_agent(AGENT, info)
    state = info.new_state()
    plies = 1 if kind == "agent" else 10
    for _ in range(plies):
        if state.outcome() is not None:
            break
        state.push(agent.choose(state))
    ru = resource.getrusage(resource.RUSAGE_SELF)
    print("RESULT " + json.dumps({"seconds": time.perf_counter() - t0, "cpu": ru.ru_utime + ru.ru_stime,
                                  "maxrss_mb": ru.ru_maxrss / 1024,
                                  "tensorflow": "tensorflow" in sys.modules}), flush=True)


# ---- parent -----------------------------------------------------------------------------------------

def _env() -> dict:
    return dict(os.environ, PYTHONUNBUFFERED="1", TF_CPP_MIN_LOG_LEVEL="3")


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def time_to_line(path: str, args: list[str], pattern: str) -> dict:
    """Seconds from starting ``descent ARGS`` (through this file's child mode) to the first stdout
    line matching ``pattern``; the process is then closed (stdin shut: the game is abandoned)."""
    cmd = [sys.executable, __file__, "--child", "cli", "--path", path, "--", *args]
    cpu0 = _children_cpu()
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                         env=_env(), text=True, cwd=ROOT)
    seen = None
    for line in p.stdout:
        if re.search(pattern, ANSI.sub("", line)):
            seen = time.perf_counter() - t0
            break
    p.stdin.close()
    p.stdout.read()
    p.wait(timeout=120)
    if seen is None:
        raise RuntimeError(f"{' '.join(args)} ({path}): no line matching {pattern!r}")
    return {"seconds": seen, "process_cpu": _children_cpu() - cpu0}


def interpreter_start() -> float:
    """Seconds a bare ``python -c pass`` takes here (added to the agent child's own clock)."""
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    return time.perf_counter() - t0


def agent_child(kind: str, path: str) -> dict:
    cmd = [sys.executable, __file__, "--child", kind, "--path", path]
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, env=_env(), cwd=ROOT, timeout=300)
    wall = time.perf_counter() - t0
    lines = [x for x in p.stdout.splitlines() if x.startswith("RESULT ")]
    if p.returncode != 0 or not lines:
        raise RuntimeError(f"{kind} ({path}) failed: {p.stderr[-2000:]}")
    out = json.loads(lines[-1][len("RESULT "):])
    if out["tensorflow"] != (path == "keras"):
        raise RuntimeError(f"{kind} ({path}): tensorflow imported = {out['tensorflow']}")
    out["process_wall"] = wall
    return out


MEASURES = {
    "first_board": lambda path: time_to_line(path, ["play", GAME, "--plain"], r"\bto move\b"),
    "first_computer_move": lambda path: time_to_line(
        path, ["play", GAME, "--plain", "--seat", "second", "--iterations", "10"], r"The computer \(x\) plays"),
    "agent_one_move": lambda path: agent_child("agent", path),
    "worker_rss": lambda path: agent_child("worker", path),
}
HEADLINE = {"first_board": "seconds", "first_computer_move": "seconds", "agent_one_move": "seconds_from_start",
            "worker_rss": "maxrss_mb"}


def summarise(samples: dict) -> dict:
    out = {}
    for measure, by_path in samples.items():
        key = HEADLINE[measure]
        row = {}
        for path, runs in by_path.items():
            row[path] = {k: statistics.median(r[k] for r in runs) for k in runs[0] if k != "tensorflow"}
        row["ratio_keras_over_direct"] = row["keras"][key] / row["direct"][key]
        row["headline"] = key
        out[measure] = row
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--json", default=str(ROOT / "bench" / "results_play_startup.json"))
    ap.add_argument("--child", choices=("cli", "agent", "worker"))
    ap.add_argument("--path", choices=PATHS)
    ap.add_argument("rest", nargs="*")
    a = ap.parse_args()
    if a.child:
        child(a.child, a.path, a.rest)
        return 0
    samples = {m: {p: [] for p in PATHS} for m in MEASURES}
    starts = []
    load = os.getloadavg()
    for rep in range(a.repeats):
        order = PATHS if rep % 2 == 0 else PATHS[::-1]
        starts.append(interpreter_start())
        for measure, run in MEASURES.items():
            for path in order:
                r = run(path)
                if measure == "agent_one_move":
                    r["seconds_from_start"] = r["seconds"] + starts[-1]
                samples[measure][path].append(r)
        print(f"repeat {rep + 1}/{a.repeats}: " + ", ".join(
            f"{m} {samples[m]['keras'][-1][HEADLINE[m]]:.2f}/{samples[m]['direct'][-1][HEADLINE[m]]:.2f}"
            for m in MEASURES), flush=True)
    summary = summarise(samples)
    results = {"bench": "play_startup", "game": GAME, "network": str(NET.relative_to(ROOT)), "agent": AGENT.split(",net=")[0],
               "repeats": a.repeats, "python": platform.python_version(), "machine": platform.machine(),
               "cpus": os.cpu_count(), "loadavg_at_start": load, "loadavg_at_end": os.getloadavg(),
               "interpreter_start_median": statistics.median(starts),
               "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
               "command": "python -m bench.bench_play_startup --repeats %d" % a.repeats,
               "summary": summary, "samples": samples}
    from training.fileio import write_json
    write_json(a.json, results)
    for m, row in summary.items():
        k = row["headline"]
        print(f"{m:22s} keras {row['keras'][k]:8.2f}  direct {row['direct'][k]:8.2f}  ({k}; keras/direct "
              f"{row['ratio_keras_over_direct']:.1f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
