"""Self-play actors feeding one learner: one network trained with every core of a machine.

A member with ``[run] actors = K`` (K >= 2) plays in K actor processes; its own process is the
learner. They talk through files of the member's directory (``training.layout``), each written
under a temporary name and renamed (``training.fileio``):

* ``network.h5``: the network the actors play with (a ``descent-weights-1`` file, read without
  TensorFlow by ``training.network.read_network``), published by the learner after the state that
  counts a training pass is saved, with its ``network_version`` (the member's training passes so
  far, saved in its counters) and training seconds. An actor checks it (one ``stat``) before each
  game it starts and loads a new version then; games in flight go on with the new weights.
* ``inbox/a<A>.<SEQ>.npz``: a game finished by actor A, its SEQ-th: examples, targets, result, the
  network versions it was played with (at its start and its end), its seconds and the actor's CPU
  seconds since its previous game. The learner counts the files in order of arrival (modification
  time, then actor and sequence): replay file, training pass, state, log line, then deletes the
  file. The state records the last SEQ counted of each actor (``actor_games``), so a file met again
  after a kill (counted, not yet deleted) is deleted without being counted: no game counts twice;
  a game's file exists whole or not at all, so a kill loses at most the games in flight.
* ``actors/actor_<A>.json``: the actor's state (pid, network version, games, plies, counts), every
  ``progress_seconds``.

An actor imports no TensorFlow: its network runs in ONNX Runtime (or NumPy). A restarted actor
continues its sequence after the last one counted and the last one waiting in the inbox. The
actors of a killed learner die with it (``PR_SET_PDEATHSIG`` and a parent check before each game
and each file). On Ray (``descent.distributed``) the actors are Ray actors: they receive each
published version's bytes and return their finished games, which the learner's side writes into the
inbox; the rest is the same.

Memory: the member's ``memory_mb`` covers all its processes' search tables and examples: the games
in flight of all K actors share the self-play part of the cap (``training.memory.selfplay_caps``
with K times the games in flight). Not counted: each actor's interpreter and network copy (a few
tens of megabytes each).
"""
from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

import games
from games.errors import GameError
from games.python_game import raise_pending
from search_ext import selfplay
from training import layout
from training.fileio import CRASH_ENV, atomic_target, clean_temp_files, crash_point, write_json
from training.inference import make_inference
from training.network import read_network
from training.progress import ROUNDS, exploration

CPUS_ENV = "DESCENT_CPUS"
POLL_SECONDS = 0.05
FORMAT = "descent-inbox-1"


def machine_cpus() -> int:
    """The cores the automatic choices count: ``$DESCENT_CPUS`` when set, else the CPUs this
    process may run on."""
    env = os.environ.get(CPUS_ENV, "").strip()
    if env:
        try:
            return max(1, int(env))
        except ValueError:
            raise ValueError(f"{CPUS_ENV}={env!r} is not a number of cores") from None
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:          # not Linux
        return os.cpu_count() or 1


def resolve_actors(requested: int, population: int, remote: bool = False) -> tuple[int, str | None]:
    """The actors of each member: ``requested`` when given (> 0); else (0, auto) a lone member on a
    machine with more cores than members gets one actor per spare core (the learner keeps one), the
    rest 1 (self-play inside the member's process). Returns (actors, a note naming the automatic
    choice, or None)."""
    if requested > 0:
        return int(requested), None
    cpus = machine_cpus()
    if population == 1 and not remote and cpus - 1 >= 2:
        k = cpus - 1
        return k, (f"{k} self-play actors for the lone member ({cpus} cores: one for its learner, "
                   f"the spare ones for actors; --actors to change)")
    return 1, None


# ---- the files ------------------------------------------------------------------------------------

def write_game(inbox: Path, actor: int, seq: int, game: dict) -> Path:
    """Write a finished game (``game_record``) into the inbox, atomically."""
    path = layout.inbox_file(inbox, actor, seq)
    arrays: dict[str, Any] = {k: v for k, v in game.items() if isinstance(v, np.ndarray)}
    meta = {k: v for k, v in game.items() if not isinstance(v, np.ndarray)}
    meta["format"] = FORMAT
    with atomic_target(path) as tmp:
        with open(tmp, "wb") as f:
            arrays["meta"] = np.frombuffer(json.dumps(meta).encode(), np.uint8)
            np.savez(f, **arrays)
        crash_point("actor_writing")           # written under its temporary name only
    crash_point("actor_shipped")
    return path


def read_game(path: Path, planes_shape) -> dict:
    """A game file of the inbox as the learner counts it: ``x`` (float32 planes), ``y``,
    ``movers``, ``root_values`` and the record's fields (``actor``, ``seq``, ``network_version``,
    ``result``, ``plies``, ...). ``ValueError`` when it is not one."""
    with np.load(path, allow_pickle=False) as f:
        meta = json.loads(bytes(f["meta"]).decode())
        if meta.get("format") != FORMAT:
            raise ValueError(f"{path}: not a game of an actor (format {meta.get('format')!r})")
        g = dict(meta)
        if "packed" in f.files:
            n = int(np.prod(planes_shape))
            p = f["packed"]
            g["x"] = np.unpackbits(p, axis=1, count=n).reshape(len(p), *planes_shape).astype(np.float32)
        else:
            g["x"] = f["x"].astype(np.float32)
        for k in ("y", "movers", "root_values"):
            g[k] = f[k]
    return g


def game_record(g: dict, actor: int, seq: int, first_version: int, version: int,
                cpu: float) -> dict:
    """What an actor ships of a game the pool finished (arrays packed when 0/1)."""
    x = np.asarray(g["x"], np.float32)
    out: dict = {"actor": actor, "seq": seq, "network_version_first": first_version,
                 "network_version": version, "result": int(g["result"]), "plies": int(g["plies"]),
                 "e": float(g["tag"][2]), "short_moves": int(g.get("short_moves", 0)),
                 "seconds": float(g.get("seconds", 0.0)), "actor_cpu": float(cpu),
                 "iterations": int(g.get("iterations", 0)),
                 "y": np.asarray(g["y"], np.float32), "movers": np.asarray(g["movers"], np.int8),
                 "root_values": np.asarray(g["root_values"], np.float32)}
    if len(x) and bool(np.all((x == 0) | (x == 1))):
        out["packed"] = np.packbits(x.reshape(len(x), -1).astype(np.uint8), axis=1)
    else:
        out["x"] = x
    return out


def inbox_arrivals(inbox: Path) -> list[tuple[int, int, Path]]:
    """The games waiting in the inbox in order of arrival: (actor, seq, path), sorted by the time
    the file was written, then actor and sequence (each actor's files keep its order)."""
    found = []
    try:
        entries = list(os.scandir(inbox))
    except FileNotFoundError:
        return []
    for e in entries:
        key = layout.inbox_game(e.name)
        if key is None:
            continue
        try:
            t = e.stat().st_mtime_ns
        except FileNotFoundError:
            continue
        found.append((t, key[0], key[1], Path(e.path)))
    found.sort()
    return [(a, s, p) for _, a, s, p in found]


def first_seq(inbox: Path, actor: int, counted) -> int:
    """The sequence number a (re)started actor begins with: after the last one of its files
    waiting in the inbox and the last one counted (``counted()``, read after the inbox: a file
    counted and deleted in between is then in the count)."""
    waiting = [s for a, s, _ in inbox_arrivals(inbox) if a == actor]
    return max([counted(), *waiting]) + 1


# ---- an actor -------------------------------------------------------------------------------------

GAME_ERROR_EXIT = 3         # an actor's exit status for an error of the game itself (GameError)


@dataclass
class ActorJob:
    """What an actor process needs (plain data: it travels as JSON)."""

    run_dir: str
    member: int
    actor: int
    game: str
    selfplay: dict                 # the config's [selfplay] section
    seed: int                      # the member's seed
    budget: float                  # the member's budget (exploration's schedule)
    games_in_flight: int
    max_nodes: int
    max_example_bytes: int
    first_seq: int = 1
    inference: str = "auto"
    threads: int = 1
    backlog: int = 0               # pause while this many of its games wait uncounted (0: never)
    progress_seconds: float = 20.0
    network: str = ""              # the published network's path (default: the member's)
    parent: int = 0                # exit when this process is no longer the parent
    cache_states: int = 0          # its value cache (training.memory.cache_caps; 0: none)


class Actor:
    """Plays self-play games with the latest published network and ships each finished game
    (``ship(record)``; default: into the member's inbox). ``stop()``: finish at once (the games
    in flight are dropped)."""

    def __init__(self, job: ActorJob, ship=None, waiting=None, stop=None):
        self.job = job
        self.info = games.load(job.game)
        self.mdir = layout.member_dir(job.run_dir, job.member)
        self.net_path = Path(job.network) if job.network else layout.network_file(self.mdir)
        self.inbox = layout.inbox_dir(self.mdir)
        self.ship = ship or (lambda rec: write_game(self.inbox, job.actor, rec["seq"], rec))
        self.waiting = waiting or self._waiting_files
        self._stop = stop or (lambda: False)
        self.seq = job.first_seq - 1        # of the last game shipped (numbered as they end)
        self.started = 0                    # games started by this process (their seeds)
        self.version = -1
        self.trained = 0.0
        self.stamp: tuple | None = None
        self.inference: Any = None
        self.changed = False
        self.cpu = time.process_time()
        self.games = 0
        self.plies = 0
        self.pool: Any = None
        self.last_status = 0.0
        self.t0 = time.perf_counter()

    # ---- the network
    def load(self) -> bool:
        """Load the published network if it changed (one ``stat``); whether one is loaded."""
        try:
            st = self.net_path.stat()
        except FileNotFoundError:
            return self.inference is not None
        stamp = (st.st_ino, st.st_size, st.st_mtime_ns)
        if stamp == self.stamp:
            return True
        net = read_network(self.net_path, self.info, cache=False)
        if self.inference is None:
            self.inference = make_inference(net, self.job.inference if self.job.inference != "tf"
                                            else "auto", threads=self.job.threads)
        else:
            self.inference.refresh(net.weights)
            self.changed = True
        self.version = int(net.meta.get("network_version", 0))
        self.trained = float(net.meta.get("train_seconds", 0.0))
        self.stamp = stamp
        return True

    def stopped(self) -> bool:
        return bool(self._stop()) or (self.job.parent > 0 and os.getppid() != self.job.parent)

    def _waiting_files(self) -> int:
        prefix = f"a{self.job.actor:03d}."
        try:
            return sum(1 for e in os.scandir(self.inbox) if e.name.startswith(prefix))
        except FileNotFoundError:
            return 0

    # ---- the pool's callbacks
    def new_game(self):
        if self.stopped():
            return None
        self.load()
        while self.job.backlog and self.waiting() >= self.job.backlog:
            if self.stopped():
                return None
            time.sleep(POLL_SECONDS)
            self.load()
        self.started += 1
        sp = self.job.selfplay
        e = exploration(sp, self.trained, self.job.budget)
        epsilon = sp["epsilon"] if sp["exploration"] == "epsilon" else -1.0
        # seeded by (member seed, actor, first sequence number of this process, game started):
        # a restarted actor plays new games once it shipped one
        seed = np.random.SeedSequence([self.job.seed, 1 + self.job.actor, self.job.first_seq,
                                       self.started])
        return int(seed.generate_state(1, np.uint64)[0]), e, epsilon, (self.started, self.version, e)

    def on_game(self, g: dict) -> None:
        """Ship a finished game under the actor's next sequence number: games in flight end in
        any order, and the numbers follow the order they are shipped in (the learner's check)."""
        raise_pending()         # a Python game's error in this game: the actor stops, it is not shipped
        _, first, _ = g["tag"]
        cpu = time.process_time()
        if self.job.parent > 0 and os.getppid() != self.job.parent:
            return                  # the learner is gone: nobody will count it
        self.seq += 1
        self.ship(game_record(g, self.job.actor, self.seq, first, self.version, cpu - self.cpu))
        self.cpu = cpu
        self.games += 1
        self.plies += int(g["plies"])

    def refresh(self) -> bool:
        """Whether a new version was loaded since the last round (the value cache is then emptied)."""
        changed, self.changed = self.changed, False
        return changed

    def evaluate(self, batch):
        return self.inference(batch)

    def status(self, info: dict | None = None) -> dict:
        info = dict(info or (self.pool.progress_info() if self.pool is not None else {}))
        return {"actor": self.job.actor, "pid": os.getpid(), "network_version": self.version,
                "games": self.games, "plies": self.plies, "seq": self.seq,
                "seconds": round(time.perf_counter() - self.t0, 1), **info,
                "time": time.strftime("%Y-%m-%dT%H:%M:%S")}

    def _progress(self, info: dict) -> None:
        now = time.perf_counter()
        if now - self.last_status >= self.job.progress_seconds:
            self.last_status = now
            self.write_status(info)

    def write_status(self, info: dict | None = None) -> None:
        path = layout.actor_status(self.mdir, self.job.actor)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_json(path, self.status(info))

    def run(self, write_status: bool = True) -> int:
        """Play until stopped; returns the games shipped."""
        while not self.load():
            if self.stopped():
                return self.games
            time.sleep(POLL_SECONDS)
        sp = self.job.selfplay
        self.pool = selfplay.SelfPlayPool(
            self.info, self.evaluate, iterations=sp["iterations"] if sp["time"] <= 0 else 0,
            seconds=sp["time"], games_in_flight=self.job.games_in_flight,
            max_nodes=self.job.max_nodes, max_example_bytes=self.job.max_example_bytes,
            cache_states=self.job.cache_states, refresh=self.refresh)
        self.pool.run(self.new_game, self.on_game, stop=self.stopped,
                      progress=self._progress if write_status else None, progress_every=ROUNDS)
        if write_status:
            self.write_status()
        return self.games


def _die_with_parent() -> None:
    """Linux: SIGKILL this process when its parent dies (a learner killed by SIGKILL takes its
    actors with it). Best effort elsewhere (the parent check before each game remains)."""
    with contextlib.suppress(Exception):
        import ctypes  # lazy: only actor processes need it
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)       # PR_SET_PDEATHSIG


def actor_main(argv: list[str]) -> int:
    """``python -m training.actors JOB_JSON``: one actor process until SIGTERM (or its parent's
    end)."""
    job = ActorJob(**json.loads(argv[0]))
    _die_with_parent()
    if job.parent > 0 and os.getppid() != job.parent:
        return 0
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(1))
    signal.signal(signal.SIGINT, signal.SIG_IGN)        # the learner stops its actors itself
    try:
        Actor(job, stop=lambda: bool(stopping)).run()
    except GameError as exc:
        # the game's own error (a Python game's code, games.python_game): the learner stops the
        # member with it, in one line (its status file carries the message)
        with contextlib.suppress(OSError):
            path = layout.actor_status(layout.member_dir(job.run_dir, job.member), job.actor)
            path.parent.mkdir(parents=True, exist_ok=True)
            write_json(path, {"actor": job.actor, "error": str(exc)})
        return GAME_ERROR_EXIT
    except Exception as exc:
        print(f"actor {job.actor} of member {job.member}: {type(exc).__name__}: {exc}",
              file=sys.stderr, flush=True)
        return 1
    return 0


# ---- the learner's side ---------------------------------------------------------------------------

class LocalActors:
    """K actor processes of one member on this machine. ``job(actor) -> ActorJob`` makes the job
    of an actor (re)started now (its first sequence number included). ``check()`` restarts an
    actor killed by a signal (its games in flight are lost, its shipped ones are in the inbox) and
    raises ``RuntimeError`` for one that failed (a ``GameError`` with its message for one that
    ended with an error of the game: ``GAME_ERROR_EXIT``); ``stop()`` ends them all (SIGTERM: the games in
    flight are dropped)."""

    STOP_SECONDS = 60.0
    MAX_RESTARTS = 100

    def __init__(self, k: int, job, note=None):
        self.k, self.job, self.note = k, job, note or (lambda msg: None)
        self.procs: dict[int, subprocess.Popen] = {}
        self.restarts = 0

    def _spawn(self, actor: int, again: bool = False) -> None:
        job = dataclasses.replace(self.job(actor), parent=os.getpid())
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
        if again:                   # a test's kill (fileio.crash_point) aims at the first process
            env.pop(CRASH_ENV, None)
        self.procs[actor] = subprocess.Popen(
            [sys.executable, "-m", "training.actors", json.dumps(dataclasses.asdict(job))],
            env=env, stdin=subprocess.DEVNULL)

    def start(self) -> None:
        for a in range(self.k):
            self._spawn(a)

    def check(self) -> None:
        for a, p in list(self.procs.items()):
            rc = p.poll()
            if rc is None:
                continue
            if rc == GAME_ERROR_EXIT:
                raise GameError(self._game_error(a))
            if rc < 0 and self.restarts < self.MAX_RESTARTS:
                self.restarts += 1
                self.note(f"actor {a} ended by signal {-rc}; its games in flight are lost, "
                          f"restarting it")
                self._spawn(a, again=True)
            else:
                raise RuntimeError(f"actor {a} ended with exit status {rc} (its message is above)")

    def _game_error(self, actor: int) -> str:
        """The game's error an actor ended with (``actor_main``), from its status file."""
        job = self.job(actor)
        try:
            status = json.loads(layout.actor_status(layout.member_dir(job.run_dir, job.member), actor).read_text())
            return str(status["error"])
        except (OSError, ValueError, KeyError, TypeError):
            return f"actor {actor} of member {job.member} ended with an error of the game {job.game}"

    def alive(self) -> int:
        return sum(p.poll() is None for p in self.procs.values())

    def stop(self) -> None:
        for p in self.procs.values():
            if p.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    p.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + self.STOP_SECONDS
        for p in self.procs.values():
            try:
                p.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def actor_states(mdir: Path, k: int) -> list[dict]:
    """The last state each of a member's K actors wrote (``{}`` for one that wrote none yet)."""
    out = []
    for a in range(k):
        try:
            out.append(json.loads(layout.actor_status(mdir, a).read_text()))
        except (OSError, ValueError):
            out.append({"actor": a})
    return out


def clean_inbox(inbox: Path) -> None:
    """Temporary files of writes killed before their rename (their writers are dead)."""
    clean_temp_files(inbox)


if __name__ == "__main__":
    sys.exit(actor_main(sys.argv[1:]))
