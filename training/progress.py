"""A member's progress while it plays (issue 20, item 2): a record at the start and then every
``progress_seconds`` (``[run]``), from the self-play pool's counts (``SelfPlayPool.progress_info``,
called every ``ROUNDS`` rounds: a long game reports while it is played).

Each record: the pool's counts (games in flight and finished, plies, search iterations, table states
and bytes, example bytes), the rates since the previous record (iterations, plies and evaluated
states per second, games per minute), with actors (``training.actors``) their counts summed, the
games arrived from all of them, and each actor's state (``actors``), the process's resident memory and the member's cap, the training seconds so
far, the budget and its ETA. It goes to ``report`` (``descent train`` prints it as a line), into
``status.json`` (key ``progress``, with ``done: false``) and TensorBoard (``progress/...`` scalars at
step = whole training seconds). Wall-clock time decides only when a record is printed; what it holds
comes from counts.
"""
from __future__ import annotations

import os
import time

from training import layout
from training.fileio import write_json

ROUNDS = 32          # the pool calls back every ROUNDS rounds (a round: one network call)

SCALARS = ("games_in_flight", "plies", "iterations", "iterations_per_s", "plies_per_s",
           "games_per_min", "table_states", "table_mb", "rss_mb", "eta_s")


def rss_mb() -> float | None:
    """The process's resident memory in megabytes (None where /proc is missing)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2 ** 20
    except (OSError, ValueError, IndexError):
        return None


def fmt_duration(s: float) -> str:
    s = max(0, int(s))
    d, s = divmod(s, 86400)
    h, s = divmod(s, 3600)
    m, s = divmod(s, 60)
    return (f"{d}d{h:02d}h" if d else f"{h}h{m:02d}m" if h else f"{m}m{s:02d}s")


def progress_line(rec: dict) -> str:
    """One line for a progress record."""
    actors = (f" ({rec['actors_alive']} of {len(rec['actors'])} actors)"
              if rec.get("actors") is not None and rec.get("actors_alive") is not None else "")
    return (f"member {rec['member']} playing{actors}: {rec['games_in_flight']} game(s) in flight, "
            f"{rec.get('games_per_min', 0.0):.1f} games/min, "
            f"{rec['plies']} plies ({rec['plies_per_s']:.2f}/s), {rec['iterations']} iterations "
            f"({rec['iterations_per_s']:.1f}/s), longest game {rec['longest_game']} plies, "
            f"tables {rec['table_states']} states {rec['table_mb']:.0f} MB, "
            + (f"RSS {rec['rss_mb']:.0f}/{rec['memory_mb']:.0f} MB, " if rec["rss_mb"] else "")
            + f"{rec['games_finished']} game(s) finished; trained "
            f"{rec['train_seconds']:.0f}/{rec['budget']:.0f} s, ETA {fmt_duration(rec['eta_s'])}")


class ProgressReporter:
    """The pool's ``progress`` callback for one member (see the module's docstring).

    ``timing() -> (training seconds counted, perf_counter() when they were)``; ``status() -> dict``:
    the counters for ``status.json``."""

    def __init__(self, mdir, member: int, budget: float, memory_mb: float, timing, status,
                 report=None, writer=None, tf=None, interval: float = 20.0, clock=time.perf_counter):
        self.mdir, self.member, self.budget, self.memory_mb = mdir, member, budget, memory_mb
        self.timing, self.status, self.report = timing, status, report
        self.writer, self.tf, self.interval, self.clock = writer, tf, interval, clock
        self.last_t: float | None = None
        self.last: dict | None = None
        self.record: dict | None = None

    def __call__(self, p: dict) -> None:
        now = self.clock()
        if self.last_t is not None and now - self.last_t < self.interval:
            return
        self.emit(p, now)

    def emit(self, p: dict, now: float) -> dict:
        trained, since = self.timing()
        trained += now - since
        dt = now - self.last_t if self.last_t is not None else 0.0
        prev = self.last or {"iterations": p["iterations"], "plies": p["plies"],
                             "eval_states": p["eval_states"], "games_finished": p["games_finished"]}

        def rate(k):
            return round((p[k] - prev[k]) / dt, 3) if dt > 0 else 0.0

        rss = rss_mb()
        rec = {"progress": True, "member": self.member, **p,
               "iterations_per_s": rate("iterations"), "plies_per_s": rate("plies"),
               "eval_states_per_s": rate("eval_states"),
               "games_per_min": round(60 * rate("games_finished"), 2),
               "table_mb": round(p["table_bytes"] / 2 ** 20, 1),
               "rss_mb": round(rss, 1) if rss is not None else None, "memory_mb": self.memory_mb,
               "train_seconds": round(trained, 1), "budget": self.budget,
               "eta_s": round(max(0.0, self.budget - trained), 1),
               "time": time.strftime("%Y-%m-%dT%H:%M:%S")}
        self.last_t, self.last, self.record = now, p, rec
        write_json(layout.status_file(self.mdir),
                   {**self.status(), "budget": self.budget, "done": False, "progress": rec})
        if self.writer is not None and self.tf is not None:
            with self.writer.as_default(step=int(trained)):
                for k in SCALARS:
                    if rec.get(k) is not None:
                        self.tf.summary.scalar(f"progress/{k}", float(rec[k]))
        if self.report is not None:
            self.report(rec)
        return rec


def exploration(selfplay: dict, trained: float, budget: float) -> float:
    """The ordinal distribution's e for a game started after ``trained`` of ``budget`` seconds of
    training (docs/ALGORITHMS.md section 5.2): t / T between the [selfplay] floor and ceiling."""
    return min(selfplay["exploration_ceiling"], max(selfplay["exploration_floor"], min(1.0, trained / budget)))
