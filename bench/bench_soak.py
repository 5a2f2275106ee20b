"""A soak of `descent train` as a user runs it.

Runs ``descent train GAME --population 1 --budget B --out DIR`` as a subprocess at the game's
default config (or ``--config``), and every ``--sample`` seconds records the resident memory of the
whole process tree (/proc), the games and examples counted in ``log.jsonl``, and the run
directory's size. Progress lines (``member N playing: ...``) are timestamped as they arrive. At
``--kill-at`` seconds the process group gets SIGKILL and the same command is started again (the
run resumes); the bench checks that the games counted before the kill are still counted after it
(at most the game in progress lost) and that no game number repeats in ``log.jsonl``.

Reported (``--json``, one entry per ``--key``): time to the first game, games per hour, examples
per second, peak RSS, the RSS slope after ``--warmup`` seconds (MB per hour, least squares over the
per-sample RSS), disk per hour, the largest gap between progress lines, and the kill check.

    PYTHONPATH=. .venv/bin/python -m bench.bench_soak chess --minutes 62 --kill-at 31
    PYTHONPATH=. .venv/bin/python -m bench.bench_soak 'havannah(base=8)' --minutes 62 --kill-at 31 \
        --key havannah_base8
    PYTHONPATH=. .venv/bin/python -m bench.bench_soak reversi --minutes 5 --no-kill --key reversi_8x8
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "results_soak.json"
PAGE = os.sysconf("SC_PAGE_SIZE")


def tree_pids(root: int) -> list[int]:
    """``root`` and its descendants (from /proc/*/stat parent links)."""
    children: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(d))
    out, todo = [], [root]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, []))
    return out


def tree_rss_mb(root: int) -> float:
    total = 0
    for p in tree_pids(root):
        try:
            with open(f"/proc/{p}/statm") as f:
                total += int(f.read().split()[1]) * PAGE
        except OSError:
            pass
    return total / 2 ** 20


def dir_bytes(path: Path) -> int:
    n = 0
    for root, _dirs, files in os.walk(path):
        for f in files:
            try:
                n += (Path(root) / f).stat().st_size
            except OSError:
                pass
    return n


def log_counts(run: Path) -> tuple[list[int], int]:
    """Game numbers in every member's log (log.jsonl and its archives, every record read: a repeat
    shows) and the examples they hold (of the games kept: an archive thinned by log_max_mb holds
    every k-th game only)."""
    from training.logfiles import read_history
    games, examples = [], 0
    for mdir in run.glob("member_*"):
        try:
            recs = read_history(mdir, unique=False)
        except OSError:                 # a file rotated away while reading: the next sample
            continue
        for rec in recs:
            if "examples" in rec:
                games.append(int(rec["game"]))
                examples += int(rec["examples"])
    return games, examples


def slope(xs, ys):
    n = len(xs)
    if n < 2:
        return None
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    return None if sxx == 0 else sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx


class Runner:
    """One ``descent train`` process; its progress lines are timestamped by a reader thread."""

    PROGRESS = re.compile(r"member \d+ playing: ")

    def __init__(self, cmd: list[str], t0: float, log_path: Path):
        self.t0 = t0
        self.progress: list[float] = []
        self.log = open(log_path, "ab")
        self.proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     start_new_session=True, env={**os.environ, "COLUMNS": "200"})
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        buf = b""
        while True:
            chunk = self.proc.stdout.read1(65536)
            if not chunk:
                break
            self.log.write(chunk)
            buf += chunk
            # tqdm redraws with \r: split on both
            parts = re.split(rb"[\r\n]", buf)
            buf = parts.pop()
            now = time.monotonic() - self.t0
            for p in parts:
                if self.PROGRESS.search(p.decode("utf-8", "replace")):
                    self.progress.append(round(now, 1))
        self.log.flush()

    def kill(self):
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        self.thread.join(5)

    def wait(self):
        rc = self.proc.wait()
        self.thread.join(5)
        return rc


def soak(args) -> dict:
    run = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="soak-")) / "run"
    cmd = [sys.executable, "-m", "descent", "train", args.game, "--population", "1",
           "--budget", f"{int(args.minutes * 60)}s", "--milestones", f"{int(args.minutes * 30)}s,"
           f"{int(args.minutes * 60)}s", "--out", str(run)]
    if args.config:
        cmd += ["--config", args.config]
    cmd += args.extra
    t0 = time.monotonic()
    out_log = Path(str(run) + ".stdout.log")
    run.parent.mkdir(parents=True, exist_ok=True)
    runner = Runner(cmd, t0, out_log)
    samples, kill, progress = [], None, []
    first_game_s = None
    killed = args.no_kill
    print(f"soak: {' '.join(cmd)}", flush=True)
    next_sample = 0.0
    while True:
        now = time.monotonic() - t0
        rc = runner.proc.poll()
        if now >= next_sample or rc is not None:
            games, examples = log_counts(run)
            rss = tree_rss_mb(runner.proc.pid) if rc is None else 0.0
            s = {"t": round(now, 1), "rss_mb": round(rss, 1), "games": len(games),
                 "examples": examples, "disk_bytes": dir_bytes(run) if run.exists() else 0,
                 "load1": os.getloadavg()[0]}
            samples.append(s)
            if first_game_s is None and games:
                first_game_s = round(now, 1)
            print(f"soak t={now:7.0f}s rss={rss:7.0f} MB games={len(games)} examples={examples} "
                  f"disk={s['disk_bytes'] / 2**20:.1f} MB progress lines={len(progress) + len(runner.progress)}",
                  flush=True)
            next_sample += args.sample
        if rc is not None:
            break
        if not killed and now >= args.kill_at:
            before, _ = log_counts(run)
            runner.kill()
            progress += runner.progress
            killed = True
            t_kill = time.monotonic() - t0
            runner = Runner(cmd, t0, out_log)
            kill = {"t": round(t_kill, 1), "games_before": len(before),
                    "last_game_before": max(before) if before else 0}
            print(f"soak: SIGKILL at {t_kill:.0f} s with {len(before)} games; resumed", flush=True)
            continue
        time.sleep(min(1.0, max(0.05, next_sample - (time.monotonic() - t0))))
    rc = runner.wait()
    progress += runner.progress
    games, examples = log_counts(run)
    end = time.monotonic() - t0
    if kill is not None:
        after = set(games)
        kill["games_after_resume"] = len(games)
        kill["lost_games_before_kill"] = sum(1 for g in range(1, kill["last_game_before"] + 1)
                                            if g not in after)
        kill["duplicate_game_numbers"] = len(games) - len(after)
        kill["resumed_ok"] = rc == 0 and kill["lost_games_before_kill"] <= 1 and not kill[
            "duplicate_game_numbers"]
    # the RSS slope of each process (before and after the kill), each after its own warm-up
    starts = [0.0] + ([kill["t"]] if kill else [])
    ends = starts[1:] + [end + 1]
    segs = [[s for s in samples if a + args.warmup <= s["t"] < b and s["rss_mb"] > 0]
            for a, b in zip(starts, ends)]
    seg_slopes = [slope([s["t"] for s in seg], [s["rss_mb"] for s in seg]) for seg in segs]
    seg_slopes = [round(x * 3600, 1) if x is not None else None for x in seg_slopes]
    post = [s for seg in segs for s in seg]
    live = [s for s in samples if s["rss_mb"] > 0]
    gaps = [b - a for a, b in zip(progress, progress[1:])]
    status = {}
    for st in run.glob("member_*/status.json"):
        status = json.loads(st.read_text())
    hours = end / 3600
    res = {
        "game": args.game,
        "command": " ".join(["descent"] + cmd[3:]).replace(str(run), "RUN_DIR").replace(
            str(args.config), Path(str(args.config)).name),
        "config": Path(args.config).name if args.config else f"configs/{args.game.split('(')[0]}.toml",
        "wall_s": round(end, 1), "exit_code": rc, "first_game_s": first_game_s,
        "games": len(games), "examples": examples,
        "games_per_hour": round(len(games) / hours, 1) if hours else None,
        "examples_per_s": round(examples / end, 1) if end else None,
        "peak_rss_mb": max((s["rss_mb"] for s in live), default=None),
        "rss_after_warmup_mb": [min((s["rss_mb"] for s in post), default=None),
                                max((s["rss_mb"] for s in post), default=None)],
        "rss_slope_mb_per_h": seg_slopes,  # per process: before the kill, after it
        "warmup_s": args.warmup,
        "disk_bytes": samples[-1]["disk_bytes"] if samples else 0,
        "disk_mb_per_hour": round(samples[-1]["disk_bytes"] / 2 ** 20 / hours, 2) if hours else None,
        "progress_lines": len(progress), "first_progress_s": progress[0] if progress else None,
        "max_progress_gap_s": round(max(gaps), 1) if gaps else None,
        "kill": kill, "status": status, "samples": samples,
        "machine": f"{platform.node()} {os.cpu_count()} cores",
        # the machine's 1-minute load average over the run (median): throughput is per this load
        "median_load1": sorted(s["load1"] for s in samples)[len(samples) // 2] if samples else None,
    }
    res.update(after_games(samples, kill["t"] if kill else None))
    return res


def after_games(samples: list[dict], kill_t: float | None) -> dict:
    """RSS right after each finished game (the first sample with a higher game count): a member's
    memory rises while a game's examples accumulate and falls when they go to the replay window,
    so the trend of these troughs, not the sawtooth, says whether memory keeps growing. Samples
    of the killed process and of the resumed one are fitted apart; the first game of each is left
    out (warm-up)."""
    out = {}
    for name, lo, hi in (("before_kill", 0.0, kill_t or float("inf")),
                         ("after_kill", kill_t, float("inf"))):
        if lo is None:
            continue
        seg = [s for s in samples if lo < s["t"] < hi and s["rss_mb"] > 0]
        troughs = [b for a, b in zip(seg, seg[1:]) if b["games"] > a["games"]][1:]
        fit = slope([s["t"] for s in troughs], [s["rss_mb"] for s in troughs])
        out[name] = {"rss_after_game_mb": [s["rss_mb"] for s in troughs],
                     "slope_mb_per_h": round(fit * 3600, 1) if fit is not None else None}
    return {"rss_after_each_game": out}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("game")
    ap.add_argument("--minutes", type=float, default=62.0, help="training budget (minutes)")
    ap.add_argument("--kill-at", type=float, default=None, help="minutes; default: half-way")
    ap.add_argument("--no-kill", action="store_true")
    ap.add_argument("--sample", type=float, default=60.0, help="seconds between samples")
    ap.add_argument("--warmup", type=float, default=600.0, help="seconds left out of the RSS slope")
    ap.add_argument("--config")
    ap.add_argument("--out", help="run directory (default: a new temporary one)")
    ap.add_argument("--key", help="entry in --json (default: the game)")
    ap.add_argument("--label", default="after", help="group in --json (before/after)")
    ap.add_argument("--json", default=str(RESULTS))
    ap.add_argument("--reanalyse", action="store_true",
                    help="recompute the after-game RSS trend of every entry in --json from its samples")
    args, extra = ap.parse_known_args(argv)
    if args.reanalyse:
        path = Path(args.json)
        data = json.loads(path.read_text())
        for group in data.values():
            for res in group.values():
                res.update(after_games(res["samples"], (res.get("kill") or {}).get("t")))
        path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
        return 0  # the rest: more `descent train` options
    args.extra = [a for a in extra if a != "--"]
    args.kill_at = (args.kill_at if args.kill_at is not None else args.minutes / 2) * 60
    res = soak(args)
    path = Path(args.json)
    data = json.loads(path.read_text()) if path.exists() else {}
    data.setdefault(args.label, {})[args.key or args.game] = res
    from training.fileio import write_json
    write_json(path, data, indent=1)
    print(json.dumps({k: v for k, v in res.items() if k not in ("samples", "status")}, indent=1))
    return 0 if res["exit_code"] == 0 and (res["kill"] is None or res["kill"]["resumed_ok"]) else 1


if __name__ == "__main__":
    sys.exit(main())
