"""A training run: a population of members trained independently, resumable, one run per directory.

The layout of a run directory (``checkpoints/<game>`` by default) is ``training.layout``'s.
``run.json`` holds the game, config and seed (what this run is, checked on every rerun), the
config's sha256, the code (version, git commit) that started it, and the milestones and budget of
the plan that trained it furthest (``record_milestones``: rank reads the early and final
checkpoints from there).

Every file is written under a temporary name (``.<name>.tmp<PID>``) and renamed; those a kill leaves
behind are removed when the run is resumed (under the lock). See ``training.trainer`` for how a
counted game always keeps its log line and scalars.
"""
from __future__ import annotations

import hashlib
import json
import multiprocessing as mp
import os
import subprocess
import threading
from importlib import metadata
from pathlib import Path

from tqdm import tqdm

from games import validate as v
from games.errors import GameError
from training import layout, options  # options: read at call time (tests replace its RuntimeOptions)
from training.actors import resolve_actors
from training.architecture import Architecture
from training.fileio import FileLock, clean_temp_files, write_json
from training.layout import member_dir
from training.network import CheckpointError, read_meta
from training.pool import spawn_pool
from training.progress import progress_line
from training.trainer import MemberJob, id_ranges, train_member

DATA_ENV = "DESCENT_DATA"


def data_root() -> Path:
    """The folder of the user's runs (networks, pools, results, adaptive profiles): ``$DESCENT_DATA``
    when set; else ``checkpoints/`` of the source checkout when descent runs from one (an editable
    install, or the repository on ``PYTHONPATH``); else ``checkpoints/`` in the current directory
    (an installed wheel: never inside site-packages)."""
    env = os.environ.get(DATA_ENV, "").strip()
    if env:
        return Path(env).expanduser().absolute()
    checkout = Path(__file__).resolve().parent.parent
    if (checkout / "setup.py").is_file() and (checkout / "games").is_dir():
        return checkout / "checkpoints"
    try:
        return Path.cwd() / "checkpoints"
    except OSError:                     # the current directory was removed
        return Path.home() / "checkpoints"


DEFAULT_ROOT = data_root()


class RunError(GameError):
    """A run directory that is locked, or was created for something else."""


# What run.json and a milestone's JSON must hold (games.validate schemas; more keys are kept).
RUN_RECORD = v.Record({"game": v.Str(256, empty=False), "seed": v.Int(0, 2 ** 64),
                       "config": v.Map(v.Any_())}, {"format": v.Str(64)})
MILESTONE_RECORD = v.Record({"game": v.Str(256, empty=False), "member": v.Int(0, 100_000),
                             "milestone": v.Str(64, empty=False)},
                            {"milestone_seconds": v.Real(0.0, 1e10), "train_seconds": v.Real(0.0, 1e10),
                             "cpu_seconds": v.Real(0.0, 1e12),
                             "games": v.Int(0, v.MAX_COUNT), "examples": v.Int(0, 10 ** 15),
                             "undertrained": v.Bool(), "min_milestone_games": v.Int(0, 10 ** 9)})


def read_run_record(run_dir, error=None) -> dict:
    """The checked ``run.json`` of a run directory (``error``, default ``RunError``, if it is
    missing, not JSON or not a run record)."""
    path = layout.run_record(run_dir)
    return v.load_json(path, RUN_RECORD, error or RunError, f"run record {path}")


def read_milestone(path, error=None) -> dict:
    """The checked JSON record beside a milestone checkpoint."""
    return v.load_json(path, MILESTONE_RECORD, error or RunError, f"milestone record {path}")


def milestone_undertrained(meta: dict) -> bool | None:
    """Whether a milestone's network saw fewer self-play games than ``min_milestone_games``: its
    ``undertrained`` flag, or for a record written before the flag existed, its ``games`` against
    the option's default; None when the record does not say how many games."""
    if isinstance(meta.get("undertrained"), bool):
        return meta["undertrained"]
    if meta.get("games") is None:
        return None
    return meta["games"] < options.RuntimeOptions().min_milestone_games


def default_run_dir(game_spec: str) -> Path:
    return DEFAULT_ROOT / layout.run_dir_name(game_spec)


class RunLock(FileLock):
    """An exclusive lock on a run directory (``training.fileio.FileLock`` on ``<run>/.lock``),
    released when the process ends (even by SIGKILL); ``RunError`` if another process holds it."""

    def __init__(self, run_dir: Path):
        path = layout.lock_file(run_dir)
        super().__init__(path, timeout=0, error=RunError,
                         busy=f"{path.parent}: another process is training this run "
                              f"(lock {path} is held); wait for it or stop it")


def check_run(run_dir: Path, game: str, config: dict, seed: int) -> None:
    """Create ``run.json`` or check that the run directory belongs to this game, config and seed."""
    path = layout.run_record(run_dir)
    code = code_provenance()
    record = {"game": game, "config": config, "seed": seed, "format": "descent-run-1",
              "config_sha256": config_digest(config), "code": code}
    if path.exists():
        old = read_run_record(run_dir)
        for key in ("game", "seed", "config"):
            if with_later_keys(old.get(key)) != with_later_keys(record[key]):
                what = key if key != "config" else "configuration (network, selfplay, training)"
                raise RunError(f"{run_dir}: this run was started with another {what}; "
                               f"continue it with the same settings or choose another --out")
        seen = [old.get("code")] + [c for c in old.get("continued_with", []) if isinstance(c, dict)]
        if code not in seen:            # continued by other code: say which, once per version
            write_json(path, dict(old, continued_with=seen[1:] + [code]))
        return
    write_json(path, record)


def record_milestones(run_dir: Path, milestones, budget: float) -> bool:
    """Record a plan's milestones and budget in ``run.json`` (rank and evaluate read the early and
    final checkpoints from there): added when it lacks them, replaced when the plan now trains the
    run further (a final milestone later than the recorded one). Returns whether it changed."""
    path = layout.run_record(run_dir)
    rec = read_run_record(run_dir)
    have = rec.get("milestones")
    # a recorded list stays unless this plan's final milestone lies later (the run trained further);
    # the same times under other names, or a shorter plan, keep the checkpoints already recorded
    if have and float(milestones[-1][1]) <= float(have[-1][1]):
        return False
    rec["milestones"] = [[n, s] for n, s in milestones]
    rec["budget"] = max(float(budget), float(rec.get("budget") or 0))
    write_json(path, rec)
    return True


def config_digest(config: dict) -> str:
    """sha256 of a training config, keys sorted (what run.json's ``config_sha256`` holds)."""
    return hashlib.sha256(json.dumps(config, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def code_provenance() -> dict:
    """Which code trains: the installed package's version, and when it runs from a git checkout,
    the commit and whether tracked files differ from it (``dirty``); ``commit`` is None otherwise."""
    try:
        ver = metadata.version("descent")
    except Exception:                   # not installed (the repository on PYTHONPATH)
        ver = None
    checkout = Path(__file__).resolve().parent.parent
    commit, dirty = None, None
    if (checkout / ".git").exists():
        try:
            git = ["git", "-C", str(checkout)]
            commit = subprocess.run(git + ["rev-parse", "HEAD"], capture_output=True, text=True,
                                    timeout=20, check=True).stdout.strip() or None
            dirty = bool(subprocess.run(git + ["status", "--porcelain", "--untracked-files=no"],
                                        capture_output=True, text=True, timeout=20, check=True).stdout.strip())
        except (OSError, subprocess.SubprocessError):
            commit, dirty = None, None
    return {"version": ver, "commit": commit, "dirty": dirty}


# [selfplay] keys added after runs were recorded, with the value every earlier run used
LATER_SELFPLAY = {"exploration_ceiling": 1.0}


def with_later_keys(config):
    """A recorded training config with the keys added since it was written filled in with their
    defaults, which are what every earlier run used (the network's kernel sizes, head filters and
    activation; self-play's exploration ceiling): a run started before they existed continues."""
    if isinstance(config, dict) and isinstance(config.get("network"), dict):
        config = dict(config, network={**Architecture().to_meta(), **config["network"]})
    if isinstance(config, dict) and isinstance(config.get("selfplay"), dict):
        config = dict(config, selfplay={**LATER_SELFPLAY, **config["selfplay"]})
    return config


def recorded_config(run_dir, cfg: dict, game: str, seed: int) -> str | None:
    """For a rerun without ``--config``: when ``run_dir`` holds a run of ``game`` and ``seed``
    whose recorded network, selfplay and training settings differ from ``cfg``'s (the default config
    changed since the run started, e.g. issue 20's long-game defaults), put the recorded settings
    into ``cfg`` (in place) so the run continues as it began; returns a one-line note, or None when
    nothing was changed (no run there, another game or seed, a record of other keys, or the same
    settings)."""
    if not layout.is_run(run_dir):
        return None
    try:
        rec = read_run_record(run_dir)
    except RunError:
        return None                        # check_run reports it
    old = with_later_keys(rec.get("config"))
    if rec.get("game") != game or rec.get("seed") != seed or not isinstance(old, dict):
        return None
    now = with_later_keys(training_config(cfg))
    if old == now or set(old) != set(now) or any(
            not isinstance(old[k], dict) or set(old[k]) != set(now[k]) for k in now):
        return None
    cfg.update({k: dict(old[k]) for k in now})
    changed = sorted(f"{k}.{key}" for k in now for key in now[k] if old[k][key] != now[k][key])
    return (f"note: {run_dir} continues with the settings it was started with "
            f"({', '.join(changed)} differ from the default config; give --config to check another)")


def training_config(cfg: dict) -> dict:
    """The parts of a config that define a network's training (a rerun must not change them)."""
    return {k: cfg[k] for k in ("network", "selfplay", "training")}


def runtime_config(cfg: dict) -> dict:
    """The [run] keys that set how self-play runs (not what it computes), as ``MemberJob.extra``
    carries them: the fields of ``training.options.RuntimeOptions`` that ``cfg`` sets."""
    run = cfg.get("run", {})
    return {f.name: run[f.name] for f in options.option_fields(options.RuntimeOptions) if f.name in run}


def _worker(job: MemberJob, queue):
    def report(rec):
        queue.put(rec)
    try:
        return train_member(job, report)
    except Exception as exc:          # surfaced by the driver with the member named
        raise RuntimeError(f"member {job.member}: {type(exc).__name__}: {exc}") from None


def run_training(game: str, cfg: dict, population: int, budget: float, milestones, workers: int,
                 run_dir: Path, seed: int, threads: int = 1, progress: bool = True,
                 max_games: int = 0, echo=print, remote=None, runtime: dict | None = None,
                 min_games: int = 0) -> list[dict]:
    """Train (or continue training) every member of the population; returns their counters.
    ``min_games``: the budget's floor of finished games per member (``trainer.milestone_floor``).

    ``remote(jobs, on_record) -> results``: run the members elsewhere (e.g. on Ray:
    ``descent.distributed.ray_runner``); the training package knows no cluster. ``runtime``: how
    self-play runs (``runtime_config(cfg)``: games in flight, inference backend, device, learner)."""
    run_dir = Path(run_dir)
    tcfg = training_config(cfg)
    with RunLock(run_dir):
        clean_temp_files(run_dir)          # e.g. run.json's, of a killed first run; members clean theirs
        check_run(run_dir, game, tcfg, seed)
        rt = dict(runtime_config(cfg) if runtime is None else runtime)
        rt["actors"] = resolve_actors(int(rt.get("actors", 0)), population, remote is not None)[0]
        names = [n for n, _ in milestones]
        finished = {i for i in range(population) if _finished_export(run_dir, i, budget, names)}
        jobs = [MemberJob(str(run_dir), i, game, tcfg, budget, list(milestones), seed + i,
                          threads=threads if workers > 1 else max(threads, 1), max_games=max_games,
                          extra=dict(rt), min_games=min_games)
                for i in range(population) if i not in finished]
        if finished:
            echo(f"members {id_ranges(sorted(finished))}: exported and finished (every milestone, no "
                 f"resume state): kept as they are")
        total = population * budget
        done = {i: budget if i in finished else _member_seconds(run_dir, i) for i in range(population)}
        bar = tqdm(total=round(total), initial=round(min(total, sum(done.values()))), unit="s",
                   desc=f"training {population} net(s) of {game}", disable=not progress,
                   bar_format="{l_bar}{bar}| {n_fmt}/{total_fmt} s of training [{elapsed}<{remaining}]")

        def on_record(rec):
            i = rec["member"]
            if rec.get("progress"):            # a member's progress while it plays
                (bar.write if progress else echo)(progress_line(rec))
                return
            new = min(rec["train_seconds"], budget)
            bar.update(max(0, round(new) - round(min(done[i], budget))))
            done[i] = new
            next_ms = [n for n, s in milestones if s > rec["train_seconds"]]
            msg = (f"member {i} game {rec['game']}: {rec['plies']} plies, result {rec['result']:+d}, "
                   f"{rec['examples']} examples, loss {_loss(rec['loss'])}, value error "
                   f"{rec['value_error']:.3f}, {rec['seconds']:.1f} s; trained "
                   f"{rec['train_seconds']:.0f}/{budget:.0f} s"
                   + (f", {rec['game']}/{min_games} games of the floor"
                      if rec["game"] < min_games and rec["train_seconds"] >= budget else "")
                   + (f", next milestone {next_ms[0]}" if next_ms else ""))
            if progress:
                bar.write(msg)
            else:
                echo(msg)

        results = []
        try:
            if remote is not None:
                results = remote(jobs, on_record)
            elif workers <= 1:
                for job in jobs:
                    results.append(train_member(job, on_record))
            else:
                ctx = mp.get_context("spawn")
                manager = ctx.Manager()
                queue = manager.Queue()
                stop = threading.Event()

                def pump():
                    while not stop.is_set():
                        try:
                            rec = queue.get(timeout=0.2)
                        except Exception:
                            continue
                        on_record(rec)

                t = threading.Thread(target=pump, daemon=True)
                t.start()
                with spawn_pool(min(workers, population)) as pool:
                    results = pool.starmap(_worker, [(job, queue) for job in jobs])
                stop.set()
                t.join()
                while not queue.empty():
                    on_record(queue.get())
                manager.shutdown()
        finally:
            bar.close()
        trained = iter(results)
        return [_exported_counters(run_dir, i) if i in finished else next(trained) for i in range(population)]


def _loss(loss) -> str:
    return "none yet" if loss is None else f"{loss:.4f}"


def _finished_export(run_dir: Path, member: int, budget: float, names) -> bool:
    """Whether ``member`` is a finished member copied without its resume state (``tools.export_run``,
    an experiment's ``[[games]] from``): no ``latest.h5``, but every milestone of ``names`` and a
    ``status.json`` saying it is done at ``budget`` or more. Such a member is kept, never trained
    again. ``RunError`` for a member with milestones but no resume state that is not finished at
    this budget: training it from scratch would overwrite its milestones."""
    mdir = member_dir(run_dir, member)
    if not layout.exported(mdir):
        return False
    status: dict = {}
    try:
        loaded = json.loads(layout.status_file(mdir).read_text())
        status = loaded if isinstance(loaded, dict) else {}
    except (OSError, ValueError):
        pass
    have = {n for n in layout.milestone_names(mdir) if layout.milestone_reached(mdir, n)}
    ran = status.get("budget")
    if (status.get("done") is True and isinstance(ran, (int, float)) and ran >= budget
            and set(names) <= have):
        return True
    missing = sorted(set(names) - have)
    raise RunError(f"{mdir}: milestone checkpoints ({', '.join(sorted(have))}) but no resume state "
                   f"({layout.STATE_FILE}): an exported member cannot train further"
                   + (f" (missing: {', '.join(missing)})" if missing else
                      f" (its status.json does not say it finished a budget of {budget:g} s)")
                   + "; train it in the run it came from, or give it a new run directory")


def _exported_counters(run_dir: Path, member: int) -> dict:
    """A finished exported member's counters, as its ``status.json`` holds them (the keys
    ``train_member`` returns)."""
    status = json.loads(layout.status_file(member_dir(run_dir, member)).read_text())
    return {k: v for k, v in status.items() if k not in ("budget", "done", "progress")}


def _member_seconds(run_dir: Path, member: int) -> float:
    path = layout.state_file(member_dir(run_dir, member))
    if not path.exists():
        return 0.0
    try:
        return float(read_meta(path)["counters"]["train_seconds"])
    except CheckpointError:
        return 0.0          # the member's own resume reports it


def list_checkpoints(root: Path, game: str | None = None) -> list[dict]:
    """Every milestone checkpoint under ``root`` (run directories), optionally of one game."""
    rows: list[dict] = []
    for run in layout.runs_below(root):
        rec = read_run_record(run)
        if game is not None and rec.get("game") != game and rec.get("game", "").split("(")[0] != game:
            continue
        found = []
        for mj in layout.milestone_records(run):
            meta = read_milestone(mj)
            weights = layout.weights_of_record(mj)
            found.append({"run": str(run), "game": meta.get("game"), "member": meta.get("member"),
                         "milestone": meta.get("milestone"), "games": meta.get("games"),
                         "examples": meta.get("examples"),
                         "undertrained": milestone_undertrained(meta),
                         "train_seconds": meta.get("train_seconds"), "path": str(weights),
                         "exists": weights.exists(), "_key": meta.get("milestone_seconds", 0)})
        found.sort(key=lambda r: (r["member"], r["_key"]))
        rows.extend({k: v for k, v in r.items() if k != "_key"} for r in found)
    return rows
