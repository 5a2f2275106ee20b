"""Does ``descent engine`` spend its clock? Games under a real clock, refereed through UCI only.

A referee (this script) holds the move list and both clocks (base + increment, Fischer): before each
move it sends the engine to move ``position startpos moves ...`` and ``go wtime W btime B winc I binc
I``, times the answer from ``go`` to ``bestmove``, takes that from the mover's clock and adds the
increment; an answer after the clock ran out loses the game (a flag). Every move is checked with our
rules (``parse_move``). Breakthrough 6x6, the game whose shipped network plays the ``strongest`` level
at 40 iterations a move (which, before the engine spent a clock, used 0.05-0.11 s a move of a
60 s + 0.5 s clock).

Two phases, both at the same clock for both sides (default 60 s + 0.5 s):

* ``fsf``: ``descent engine`` (full strength, as a GUI starts it) against Fairy-Stockfish (its own
  time management, ``Threads`` 1), seats alternating: each engine's share of its clock per move
  (seconds used over the clock left when the move began), its seconds a move, the part of its whole
  clock (base plus the increments it received) used by the game's end, flags, and the score;
* ``fixed``: the same engine spending its clock against the same settings at fixed iterations (the
  referee sends ``go nodes 40`` to that one, the level's rated budget, which is what a clock got before
  the fix; its time is still taken from its clock), seats alternating, each pair of games from the same
  seeded random opening (``--opening-plies``): the score of the clock-spending engine.

A game's figure is the median over its moves, a run's the median over its games, and the figures
reported are the medians over ``--runs`` runs (scores: each run's mean score, then the median; the
game counts are summed). A measure of time on a shared machine, so a benchmark, not a test:

    .venv/bin/python -m bench.bench_engine_clock --runs 3 --fsf-games 2 --fixed-games 4 \\
        --json bench/results_engine_clock.json
"""
from __future__ import annotations

import argparse
import json
import os
import queue
import random
import shutil
import statistics
import subprocess
import sys
import threading
import time

import games
from bench.harness import machine, write_results
from descent.protocols import variants_ini

GAME = "breakthrough(rows=6,cols=6)"
VARIANT = "breakthrough6x6"
FIXED_NODES = 40            # descent.strength.LEVEL_ITERATIONS: the strongest level's rated budget


class Engine:
    """A UCI engine process with a reader thread (every read has a deadline)."""

    def __init__(self, name: str, cmd: list[str], options: dict | None = None):
        self.name = name
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, text=True, bufsize=1)
        self.q: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.send("uci")
        self.until("uciok", 120)
        for k, v in (options or {}).items():
            self.send(f"setoption name {k} value {v}")
        self.send(f"setoption name UCI_Variant value {VARIANT}")
        self.ready()

    def _read(self):
        for line in self.p.stdout:
            self.q.put((time.perf_counter(), line.rstrip("\n")))
        self.q.put((time.perf_counter(), None))

    def send(self, line: str) -> None:
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()

    def until(self, prefix: str, wait: float) -> tuple[float, str, list[str]]:
        seen = []
        deadline = time.perf_counter() + wait
        while True:
            t, line = self.q.get(timeout=max(0.01, deadline - time.perf_counter()))
            if line is None:
                raise RuntimeError(f"{self.name} exited")
            seen.append(line)
            if line.startswith(prefix):
                return t, line, seen

    def ready(self) -> None:
        self.send("isready")
        self.until("readyok", 120)

    def close(self) -> None:
        try:
            self.send("quit")
            self.p.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            self.p.kill()


def play(engines, fixed: set, base: float, inc: float, opening: list[str]) -> dict:
    """One game; ``engines[seat]``; seats in ``fixed`` answer ``go nodes`` (their time is still
    taken from their clock)."""
    for e in engines:
        e.send("ucinewgame")
        e.ready()
    s = games.new_state(GAME)
    moves: list[str] = []
    for m in opening:
        s.push(s.parse_move(m))
        moves.append(m)
    clock = [base, base]
    received = [base, base]
    per_move: list[list[dict]] = [[], []]
    flag = None
    while not s.is_game_over():
        seat = s.to_move
        e = engines[seat]
        e.send("position startpos" + (" moves " + " ".join(moves) if moves else ""))
        ms = [int(clock[0] * 1000), int(clock[1] * 1000)]
        go = (f"go nodes {FIXED_NODES}" if seat in fixed else
              f"go wtime {ms[0]} btime {ms[1]} winc {int(inc * 1000)} binc {int(inc * 1000)}")
        t0 = time.perf_counter()
        e.send(go)
        t1, line, said = e.until("bestmove", clock[seat] + 30)
        used = t1 - t0
        scores = [x for x in said if x.startswith("info") and " score " in x]
        per_move[seat].append({"left": clock[seat], "used": used, "share": used / clock[seat] if clock[seat] > 0 else 1.0,
                               "score_reported": bool(scores)})
        clock[seat] -= used
        if clock[seat] < 0:
            flag = seat
            break
        clock[seat] += inc
        received[seat] += inc
        answer = line.split()[1]
        s.push(s.parse_move(answer))          # the referee's legality check
        moves.append(answer)
    if flag is not None:
        winner = 1 - flag
    else:
        o = s.outcome()
        winner = None if o is None else o.winner
    out = {"plies": len(moves), "winner": winner, "flag": flag, "seats": []}
    for seat in (0, 1):
        rows = per_move[seat]
        out["seats"].append({
            "engine": engines[seat].name, "moves": len(rows),
            "median_share": statistics.median(r["share"] for r in rows) if rows else None,
            "median_seconds": statistics.median(r["used"] for r in rows) if rows else None,
            "clock_used": (received[seat] - max(0.0, clock[seat])) / received[seat],
            "clock_left": clock[seat],
            "moves_with_score": sum(r["score_reported"] for r in rows)})
    return out


def summary(games_: list[dict], name: str) -> dict:
    mine = [(g, next(x for x in g["seats"] if x["engine"] == name)) for g in games_]
    score = [1.0 if g["winner"] is not None and g["seats"][g["winner"]]["engine"] == name else
             0.5 if g["winner"] is None else 0.0 for g, _ in mine]
    return {"games": len(mine), "score": statistics.fmean(score) if score else None,
            "wins": sum(x == 1.0 for x in score),
            "median_share_per_move": statistics.median(x["median_share"] for _, x in mine),
            "median_seconds_per_move": statistics.median(x["median_seconds"] for _, x in mine),
            "median_clock_used": statistics.median(x["clock_used"] for _, x in mine),
            "flags": sum(g["flag"] is not None and g["seats"][g["flag"]]["engine"] == name for g, _ in mine),
            "moves": sum(x["moves"] for _, x in mine),
            "moves_with_score": sum(x["moves_with_score"] for _, x in mine)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", type=float, default=60.0, help="Seconds on each clock.")
    ap.add_argument("--inc", type=float, default=0.5, help="Increment per move, seconds.")
    ap.add_argument("--fsf-games", type=int, default=2)
    ap.add_argument("--fixed-games", type=int, default=8)
    ap.add_argument("--opening-plies", type=int, default=2)
    ap.add_argument("--runs", type=int, default=3, help="Repeats of both phases (figures: medians over runs).")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    ours = [sys.executable, "-m", "descent", "engine", GAME]
    fsf_path = shutil.which("fairy-stockfish") or "/usr/games/fairy-stockfish"
    out: dict = {"game": GAME, "base_s": args.base, "inc_s": args.inc, "fixed_nodes": FIXED_NODES,
                 "machine": machine(), "load_average_start": os.getloadavg()[0]}
    rng = random.Random(args.seed)

    def opening() -> list[str]:
        s = games.new_state(GAME)
        line = []
        for _ in range(args.opening_plies):
            m = s.move_to_str(rng.choice(s.legal_actions_list()))
            s.push(s.parse_move(m))
            line.append(m)
        return line

    runs = []
    for _ in range(args.runs):
        one: dict = {}
        if args.fsf_games:
            d = Engine("descent", ours)
            f = Engine("fairy-stockfish", [fsf_path], {"VariantPath": variants_ini(), "Threads": 1})
            played = []
            for g in range(args.fsf_games):
                seats = (d, f) if g % 2 == 0 else (f, d)
                played.append(play(seats, set(), args.base, args.inc, []))
                print(json.dumps(played[-1]), flush=True)
            d.close()
            f.close()
            one["fsf"] = {"games": played, "descent": summary(played, "descent"),
                          "fairy-stockfish": summary(played, "fairy-stockfish")}
        if args.fixed_games:
            a = Engine("descent-clock", ours)
            b = Engine("descent-fixed", ours)
            played = []
            line: list[str] = []
            for g in range(args.fixed_games):
                if g % 2 == 0:
                    line = opening()
                seats = (a, b) if g % 2 == 0 else (b, a)
                played.append(play(seats, {seats.index(b)}, args.base, args.inc, line))
                print(json.dumps(played[-1]), flush=True)
            a.close()
            b.close()
            one["fixed"] = {"games": played, "descent-clock": summary(played, "descent-clock"),
                            "descent-fixed": summary(played, "descent-fixed")}
        runs.append(one)
    out["runs"] = runs
    # over the runs: the median of each run's figure (a run's figure is the median over its games)
    out["median_over_runs"] = {}
    for phase, names in (("fsf", ("descent", "fairy-stockfish")), ("fixed", ("descent-clock", "descent-fixed"))):
        if phase not in runs[0]:
            continue
        out["median_over_runs"][phase] = {
            n: {k: statistics.median(r[phase][n][k] for r in runs)
                for k in ("score", "median_share_per_move", "median_seconds_per_move", "median_clock_used")}
            for n in names}
        for n in names:
            out["median_over_runs"][phase][n].update(
                {k: sum(r[phase][n][k] for r in runs) for k in ("games", "wins", "flags", "moves", "moves_with_score")})
    out["load_average_end"] = os.getloadavg()[0]
    print(json.dumps(out["median_over_runs"], indent=1))
    if args.json:
        write_results(args.json, out)


if __name__ == "__main__":
    main()
