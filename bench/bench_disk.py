"""Disk growth of every file a training run writes.

Runs ``descent train GAME --population 1 --budget B --milestones M --out DIR`` as a
subprocess and samples, every ``--interval`` seconds, the size of each kind of file
in the run directory (replay window, log.jsonl with its archives, TensorBoard events,
latest.h5, milestones, status.json, run.json, anything else) together with the last game
number its log holds.  From the samples after a warm-up it fits bytes per hour and bytes
per game for each kind (least-squares slope) and extrapolates per day and over 70 days at
the measured rate, marking which kinds are bounded; the logs stop at their cap
(``log_max_mb``: half for log.jsonl and its archives, half for TensorBoard), so their
70-day figure is the smaller of the two.  ``--log-max-mb`` runs with a cap small enough
to reach in minutes (the peak then shows the bound).

    .venv/bin/python -m bench.bench_disk                       # reversi(size=6), 6m
    .venv/bin/python -m bench.bench_disk --game 'breakthrough(rows=6,cols=6)' --budget 3m \
        --milestones 1m,2m,3m --key breakthrough
    .venv/bin/python -m bench.bench_disk --run-dir checkpoints/reversi   # existing run
    .venv/bin/python -m bench.bench_disk --log-max-mb 0.02 --key 'reversi(size=6) log_max_mb=0.02'

Results go to bench/results_disk.json (relative paths only), one entry per --key.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
from training.logfiles import LogCaps, archives, last_game  # noqa: E402
from training.options import RuntimeOptions  # noqa: E402

RESULTS = HERE / "results_disk.json"
DAY = 86400.0
DAYS = 70

# kind -> (bounded?, why)
BOUNDS = {
    "replay": (True, "window of the last replay_games games (one HDF5 file per game)"),
    "log.jsonl": (True, "log_max_mb/2: log.jsonl (one line per game) rotated into gzip archives "
                        "log.<first>-<last>.every<k>.jsonl.gz, the older ones thinned as they fill up"),
    "tensorboard": (True, "log_max_mb/2: events appended per game and every progress_seconds; a new "
                          "event file every quarter, the oldest deleted"),
    "latest.h5": (True, "rewritten in place: weights + optimizer + counters, fixed size"),
    "milestones": (True, "one .weights.h5 + .json per configured milestone: as many as --milestones names"),
    "status.json": (True, "rewritten in place, fixed size"),
    "run.json": (True, "written once"),
    "lock": (True, "empty lock file"),
    "other": (None, "unclassified"),
}


def kind_of(rel: Path) -> str:
    parts = rel.parts
    name = rel.name
    if "replay" in parts:
        return "replay"
    if "tensorboard" in parts:
        return "tensorboard"
    if name == "log.jsonl" or (name.startswith("log.") and name.endswith(".jsonl.gz")):
        return "log.jsonl"
    if name.startswith("latest"):
        return "latest.h5"
    if name.startswith("milestone_"):
        return "milestones"
    if name == "status.json":
        return "status.json"
    if name == "run.json":
        return "run.json"
    if name == ".lock":
        return "lock"
    return "other"


def snapshot(run: Path) -> dict:
    sizes: dict[str, int] = {k: 0 for k in BOUNDS}
    counts: dict[str, int] = {k: 0 for k in BOUNDS}
    others: dict[str, int] = {}
    for root, _dirs, files in os.walk(run):
        for f in files:
            p = Path(root) / f
            try:
                n = p.stat().st_size
            except OSError:  # renamed/removed while walking (atomic rewrites, window trim)
                continue
            rel = p.relative_to(run)
            k = kind_of(rel)
            sizes[k] += n
            counts[k] += 1
            if k == "other":
                others[str(rel)] = n
    games = 0
    for mdir in run.glob("member_*"):
        try:
            games += last_game(mdir)        # log.jsonl and its archives
        except OSError:                     # a file rotated away while reading
            pass
    return {"sizes": sizes, "files": counts, "games": games, "others": others}


def slope(xs: list[float], ys: list[float]) -> float | None:
    n = len(xs)
    if n < 2:
        return None
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        return None
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx


CAPPED = ("log.jsonl", "tensorboard")       # each bounded by half of log_max_mb


def analyse(samples: list[dict], warmup_s: float, log_max_mb: float) -> dict:
    """Bytes per hour and per game of each kind, fitted on samples after warm-up (the logs: on
    the samples before their first rotation when they reached their cap)."""
    post = [s for s in samples if s["t"] >= warmup_s] or samples
    if len(post) < 3:
        post = samples
    ts = [s["t"] for s in post]
    gs = [float(s["games"]) for s in post]
    last = samples[-1]
    games_per_hour = None
    g_slope = slope(ts, gs)
    if g_slope is not None:
        games_per_hour = g_slope * 3600.0
    kinds = {}
    cap = LogCaps(log_max_mb).half
    for k, (bounded, why) in BOUNDS.items():
        ys = [float(s["sizes"][k]) for s in post]
        final = last["sizes"][k]
        if final == 0 and (k == "other" or not any(ys)):
            continue  # only transient files (atomic rewrites) seen mid-write
        fit_ts, fit_ys = ts, ys
        if k in CAPPED:             # growth before the cap: up to the first drop (a rotation)
            drop = next((i for i in range(1, len(ys)) if ys[i] < ys[i - 1]), len(ys))
            if drop >= 3:
                fit_ts, fit_ys = ts[:drop], ys[:drop]
        per_s = slope(fit_ts, fit_ys)
        per_hour = per_s * 3600.0 if per_s is not None else None
        per_game = (per_hour / games_per_hour) if (per_hour is not None and games_per_hour) else None
        row = {
            "final_bytes": final,
            "files": last["files"][k],
            "bytes_per_game": per_game,
            "bytes_per_hour": per_hour,
            "bounded": bounded,
            "why": why,
        }
        if k in CAPPED:
            row["cap_bytes"] = cap
            row["peak_bytes"] = max(s["sizes"][k] for s in samples)
            if per_hour:
                row["bytes_per_day"] = per_hour * 24
                row["days_to_cap"] = cap / (per_hour * 24)
                row["bytes_70_days"] = min(per_hour * 24 * DAYS, cap)
        elif per_hour is not None:
            if bounded:
                # a bounded kind stops growing: its size is what it holds, not a rate
                row["bytes_per_day"] = None
                row["bytes_70_days"] = None
            else:
                row["bytes_per_day"] = per_hour * 24
                row["bytes_70_days"] = per_hour * 24 * DAYS
        kinds[k] = row
    # replay: the window's full size = replay_games x bytes per game file
    rep = kinds.get("replay")
    if rep and last["files"]["replay"]:
        rep["bytes_per_file"] = last["sizes"]["replay"] / last["files"]["replay"]
    return {
        "fit_window_s": [ts[0], ts[-1]] if ts else None,
        "games": last["games"],
        "games_per_hour": games_per_hour,
        "kinds": kinds,
        "others": last.get("others", {}),
        "total_bytes": sum(last["sizes"].values()),
        "log_max_mb": log_max_mb,
    }


def find_key(obj, key):
    if isinstance(obj, dict):
        if key in obj:
            return obj[key]
        for v in obj.values():
            r = find_key(v, key)
            if r is not None:
                return r
    elif isinstance(obj, list):
        for v in obj:
            r = find_key(v, key)
            if r is not None:
                return r
    return None


def extras(result: dict, run: Path | None, n_milestones: int | None) -> None:
    """Steady-state sizes of the bounded kinds: full replay window, one milestone."""
    kinds = result["kinds"]
    replay_games = None
    if run is not None and (run / "run.json").exists():
        try:
            replay_games = find_key(json.loads((run / "run.json").read_text()), "replay_games")
        except (OSError, ValueError):
            pass
    if replay_games is None:
        replay_games = 100  # descent/config.py default
    result["replay_games"] = replay_games
    # the archives' compression (those not thinned): bytes of log lines per archived byte
    raw = packed = 0
    for mdir in (run.glob("member_*") if run is not None else []):
        for a in archives(mdir):
            if a.every == 1:
                import gzip
                raw += len(gzip.decompress(a.path.read_bytes()))
                packed += a.path.stat().st_size
    if packed:
        result["log_archive_compression"] = raw / packed
    rep = kinds.get("replay")
    if rep and rep.get("files"):
        per_file = rep["final_bytes"] / rep["files"]
        rep["bytes_per_file"] = per_file
        rep["window_full_bytes"] = per_file * replay_games
    ms = kinds.get("milestones")
    if ms and ms.get("files"):
        per = ms["final_bytes"] / (ms["files"] / 2)  # .weights.h5 + .json per milestone
        ms["bytes_per_milestone"] = per
        if n_milestones:
            ms["bytes_all_configured"] = per * n_milestones


def rel(p: Path) -> str:
    """A path relative to the repository, or only its name when it lies outside."""
    try:
        r = os.path.relpath(p.resolve(), HERE.parent)
    except ValueError:
        return p.name
    return p.name if r.startswith("..") else r


def run_training(args) -> tuple[list[dict], str]:
    tmp = None
    if args.out:
        out = Path(args.out)
    else:
        tmp = tempfile.mkdtemp(prefix="bench_disk_")
        out = Path(tmp) / "run"
    cap = [] if args.log_max_mb is None else ["--log-max-mb", str(args.log_max_mb)]
    cmd = [args.descent, "train", args.game, "--population", "1", "--budget", args.budget,
           "--milestones", args.milestones, "--out", str(out), "--seed", str(args.seed), *cap]
    shown = ["descent", "train", args.game, "--population", "1", "--budget", args.budget,
             "--milestones", args.milestones, "--out", "DIR", "--seed", str(args.seed), *cap]
    print("running:", " ".join(shown), flush=True)
    t0 = time.time()
    errlog = tempfile.TemporaryFile(mode="w+")     # not a pipe: nobody reads it while it runs
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=errlog, text=True)
    samples = []
    try:
        while True:
            rc = proc.poll()
            s = snapshot(out) if out.exists() else {"sizes": {k: 0 for k in BOUNDS},
                                                    "files": {k: 0 for k in BOUNDS},
                                                    "games": 0, "others": {}}
            s["t"] = time.time() - t0
            samples.append(s)
            print(f"t={s['t']:6.0f}s games={s['games']:5d} total={sum(s['sizes'].values()):>10d} B",
                  flush=True)
            if rc is not None:
                break
            time.sleep(args.interval)
    finally:
        if proc.poll() is None:
            proc.terminate()
            proc.wait()
    errlog.seek(0)
    err = errlog.read()
    errlog.close()
    if proc.returncode:
        print(err[-3000:], file=sys.stderr)
    return samples, " ".join(shown), out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--game", default="reversi(size=6)")
    ap.add_argument("--budget", default="6m")
    ap.add_argument("--milestones", default="2m,4m,6m")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--interval", type=float, default=30.0, help="seconds between samples")
    ap.add_argument("--warmup", type=float, default=60.0, help="seconds left out of the fit")
    ap.add_argument("--out", help="run directory to train into (default: a temporary one)")
    ap.add_argument("--run-dir", help="analyse an existing run directory (no training, one sample)")
    ap.add_argument("--descent", default=str(Path(sys.executable).with_name("descent")))
    ap.add_argument("--key", help="entry name in results_disk.json (default: the game)")
    ap.add_argument("--log-max-mb", type=float, default=None,
                    help="descent train --log-max-mb (default: the [run] default)")
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--reanalyse", metavar="KEY",
                    help="recompute the extras of a stored entry (with --run-dir: its run dir)")
    args = ap.parse_args()

    if args.reanalyse:
        data = json.loads(RESULTS.read_text())
        result = data[args.reanalyse]
        run = Path(args.run_dir) if args.run_dir else None
        extras(result, run, len(result.get("milestones", "").split(",")) or None)
        data[args.reanalyse] = result
        RESULTS.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
        print(json.dumps(result["kinds"], indent=1))
        return
    if args.run_dir:
        run = Path(args.run_dir)
        s = snapshot(run)
        s["t"] = 0.0
        kinds = {k: {"final_bytes": s["sizes"][k], "files": s["files"][k],
                     "bounded": BOUNDS[k][0], "why": BOUNDS[k][1]}
                 for k in BOUNDS if s["sizes"][k] or s["files"][k]}
        for k, row in kinds.items():
            if s["games"]:
                row["bytes_per_game_average"] = row["final_bytes"] / s["games"]
        result = {"run_dir": rel(run), "games": s["games"], "kinds": kinds,
                  "others": s["others"], "total_bytes": sum(s["sizes"].values())}
        extras(result, run, None)
        key = args.key or f"run_dir:{run.name}"
    else:
        samples, shown, run = run_training(args)
        cap = args.log_max_mb if args.log_max_mb is not None else RuntimeOptions().log_max_mb
        result = analyse(samples, args.warmup, cap)
        extras(result, run, len(args.milestones.split(",")))
        result.update({
            "command": shown,
            "game": args.game, "budget": args.budget, "milestones": args.milestones,
            "interval_s": args.interval, "warmup_s": args.warmup,
            "samples": [{"t": round(s["t"], 1), "games": s["games"], "sizes": s["sizes"]}
                        for s in samples],
        })
        key = args.key or args.game
    result["machine"] = {"cpus": os.cpu_count(), "platform": platform.platform(),
                         "python": platform.python_version()}
    print(json.dumps({k: v for k, v in result.items() if k != "samples"}, indent=1))
    if not args.no_write:
        data = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
        data["_about"] = ("disk growth per file kind of a training run (bench/bench_disk.py); "
                          "bytes per hour are at this machine's games per hour: scale by "
                          "games per hour for a faster machine")
        data[key] = result
        RESULTS.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
        print("wrote", rel(RESULTS))


if __name__ == "__main__":
    main()
