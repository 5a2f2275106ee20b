"""The layout of a run directory: the name and place of every file a run holds, in one module.

Every other module asks this one for a path (``member_dir(run, 0)``, ``state_file(mdir)``, ...);
none spells a file name of a run itself. A run directory (``checkpoints/<game>`` by default,
``run_dir_name``)::

    run.json                      what the run is (game, config, seed; training.run.check_run)
    .lock                         held (flock) while a process trains the run (training.run.RunLock)
    pools.json                    the high and low pools (descent rank)
    results.db                    one row per match (descent rank, evaluate)
    report/                       table.txt, results.csv, figures (descent report, pipeline)
    calibrations/                 <name>.json, <game-key>.games.jsonl (+ .lock, .aborted.jsonl)
                                  (descent calibrate; names from its settings: calibration_files)
    member_NN/latest.h5           rolling state: weights, optimizer, counters, RNG (resume point)
    member_NN/status.json         counters, progress, done
    member_NN/milestone_<D>.weights.h5 + milestone_<D>.json    named checkpoints (e.g. 20d, 70d)
    member_NN/replay/g<GAME>.h5   replay window, one file per game (training.replay)
    member_NN/log.jsonl           one line per game (training.logfiles), and its archives
    member_NN/log.<a>-<b>.every<k>.jsonl.gz
    member_NN/tensorboard/        TensorBoard scalars (events.out.tfevents.*)
    member_NN/network.h5          the network the member's actors play with, published by its
                                  learner after each training pass (training.actors)
    member_NN/inbox/a<A>.<SEQ>.npz   a game finished by actor A (its SEQ-th), waiting to be counted
    member_NN/actors/actor_<A>.json  actor A's state (pid, network version, games, counts)

An experiment (``descent experiment``) keeps one such run directory per game under its ``runs``
folder, each named ``run_dir_name(spec)``, and its report in its own folder (``report_files``).
"""
from __future__ import annotations

import re
from pathlib import Path

RUN_RECORD = "run.json"
LOCK = ".lock"
POOLS = "pools.json"
RESULTS_DB = "results.db"
REPORT_DIR = "report"
REPORT_TABLE = "table.txt"
REPORT_CSV = "results.csv"
CALIBRATIONS_DIR = "calibrations"
CALIBRATION_LOG = ".games.jsonl"

MEMBER = re.compile(r"^member_(\d+)$")
STATE_FILE = "latest.h5"
STATUS_FILE = "status.json"
LOG_FILE = "log.jsonl"
LOG_ARCHIVE = re.compile(r"^log\.(\d+)-(\d+)\.every(\d+)\.jsonl\.gz$")
REPLAY_DIR = "replay"
REPLAY_FILE = re.compile(r"^g(\d{8})\.h5$")
TENSORBOARD_DIR = "tensorboard"
NETWORK_FILE = "network.h5"
INBOX_DIR = "inbox"
INBOX_FILE = re.compile(r"^a(\d{3})\.(\d{9})\.npz$")
ACTORS_DIR = "actors"
EVENTS = "events.out.tfevents.*"
MILESTONE_PREFIX = "milestone_"
WEIGHTS_SUFFIX = ".weights.h5"


# ---- the run ------------------------------------------------------------------------------------

def run_dir_name(spec: str) -> str:
    """The folder name of a game spec's run: ``reversi(size=6)`` -> ``reversi_size-6``."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", spec.replace("=", "-")).strip("_")


def run_record(run_dir) -> Path:
    return Path(run_dir) / RUN_RECORD


def is_run(run_dir) -> bool:
    """Whether ``run_dir`` holds a training run (its ``run.json``)."""
    return run_record(run_dir).exists()


def runs_below(root) -> list[Path]:
    """``root`` itself when it is a run, else the runs directly below it, sorted."""
    root = Path(root)
    return [root] if is_run(root) else sorted(p.parent for p in root.glob(f"*/{RUN_RECORD}"))


def lock_file(run_dir) -> Path:
    return Path(run_dir) / LOCK


def pools_file(run_dir) -> Path:
    return Path(run_dir) / POOLS


def pools_below(root) -> list[Path]:
    """The ``pools.json`` of the runs directly below ``root``, sorted."""
    return sorted(Path(root).glob(f"*/{POOLS}"))


def results_db(run_dir) -> Path:
    return Path(run_dir) / RESULTS_DB


def results_dbs_below(root) -> list[Path]:
    """The ``results.db`` of the runs directly below ``root``, sorted."""
    return sorted(Path(root).glob(f"*/{RESULTS_DB}"))


def report_dir(run_dir) -> Path:
    return Path(run_dir) / REPORT_DIR


def calibrations_dir(run_dir) -> Path:
    return Path(run_dir) / CALIBRATIONS_DIR


def calibration_files(run_dir, result: str, games: str) -> tuple[Path, Path]:
    """(result record, game log) of a calibration named ``result`` (its design) and ``games`` (the
    games it plays, shared by the designs that play the same games)."""
    out = calibrations_dir(run_dir)
    return out / f"{result}.json", out / f"{games}{CALIBRATION_LOG}"


def calibration_lock(game_log) -> Path:
    """The lock held while a calibration plays the games of ``game_log``."""
    return Path(game_log).with_name(Path(game_log).name + ".lock")


def calibration_aborted_log(game_log) -> Path:
    """The log of the aborted games (an outside engine failed) beside a calibration's game log."""
    name = Path(game_log).name
    return Path(game_log).with_name(name.removesuffix(CALIBRATION_LOG) + ".aborted.jsonl")


# ---- its members --------------------------------------------------------------------------------

def member_dir(run_dir, member: int) -> Path:
    return Path(run_dir) / f"member_{member:02d}"


def member_dirs(run_dir) -> dict[int, Path]:
    """The members' directories of a run, by member number."""
    out = {}
    for p in Path(run_dir).glob("member_*"):
        m = MEMBER.match(p.name)
        if m and p.is_dir():
            out[int(m.group(1))] = p
    return dict(sorted(out.items()))


def state_file(mdir) -> Path:
    return Path(mdir) / STATE_FILE


def status_file(mdir) -> Path:
    return Path(mdir) / STATUS_FILE


def log_file(mdir) -> Path:
    return Path(mdir) / LOG_FILE


def log_archive_name(first: int, last: int, every: int) -> str:
    return f"log.{first:09d}-{last:09d}.every{every}.jsonl.gz"


def replay_dir(mdir) -> Path:
    return Path(mdir) / REPLAY_DIR


def replay_file(directory, game: int) -> Path:
    """The replay file of game ``game`` in a replay directory."""
    return Path(directory) / f"g{game:08d}.h5"


def replay_game(name: str) -> int | None:
    """The game number of a replay file's name, or None when it is not one."""
    m = REPLAY_FILE.match(name)
    return int(m.group(1)) if m else None


def tensorboard_dir(mdir) -> Path:
    return Path(mdir) / TENSORBOARD_DIR


def network_file(mdir) -> Path:
    """The network a member's actors play with (its learner publishes each version there)."""
    return Path(mdir) / NETWORK_FILE


def inbox_dir(mdir) -> Path:
    return Path(mdir) / INBOX_DIR


def inbox_file(directory, actor: int, seq: int) -> Path:
    """The file of actor ``actor``'s ``seq``-th game in an inbox directory."""
    return Path(directory) / f"a{actor:03d}.{seq:09d}.npz"


def inbox_game(name: str) -> tuple[int, int] | None:
    """(actor, seq) of an inbox file's name, or None when it is not one."""
    m = INBOX_FILE.match(name)
    return (int(m.group(1)), int(m.group(2))) if m else None


def actor_status(mdir, actor: int) -> Path:
    return Path(mdir) / ACTORS_DIR / f"actor_{actor:02d}.json"


def milestone_weights(mdir, name: str) -> Path:
    return Path(mdir) / f"{MILESTONE_PREFIX}{name}{WEIGHTS_SUFFIX}"


def milestone_record(mdir, name: str) -> Path:
    """The JSON record beside a milestone's weights."""
    return Path(mdir) / f"{MILESTONE_PREFIX}{name}.json"


def weights_of_record(record: Path) -> Path:
    """The weights beside a milestone's JSON record."""
    return Path(record).with_suffix(WEIGHTS_SUFFIX)


def record_of_weights(weights: Path) -> Path:
    """The JSON record beside a weights file (``x.weights.h5`` -> ``x.json``)."""
    return Path(weights).with_suffix("").with_suffix(".json")


def milestone_files(mdir) -> list[Path]:
    """Every file of a member's milestones (weights and records), sorted."""
    return sorted(Path(mdir).glob(f"{MILESTONE_PREFIX}*"))


def exported(mdir) -> bool:
    """Whether a member is a copy without its resume state (``tools.export_run``): milestones but no
    ``latest.h5``. Training it from scratch would overwrite its milestones."""
    return not state_file(mdir).exists() and bool(milestone_files(mdir))


def milestone_names(mdir) -> list[str]:
    """The names of a member's milestones that have a record, sorted."""
    return sorted(p.name[len(MILESTONE_PREFIX):-len(".json")]
                  for p in Path(mdir).glob(f"{MILESTONE_PREFIX}*.json"))


def milestone_records(run_dir) -> list[Path]:
    """The JSON records of every member's milestones of a run."""
    return sorted(Path(run_dir).glob(f"member_*/{MILESTONE_PREFIX}*.json"))


def milestone_reached(mdir, name: str) -> bool:
    """Whether a member wrote milestone ``name``: its record and its weights, or only its record in
    an exported member (``exported``), whose export may leave out the weights no pool uses
    (``tools.export_run`` lists them with ``kept: false``)."""
    return milestone_record(mdir, name).exists() and (milestone_weights(mdir, name).exists()
                                                      or exported(mdir))


def trained(run_dir, population: int, names) -> bool:
    """Whether every member below ``population`` has written every milestone of ``names``."""
    return all(milestone_reached(member_dir(run_dir, m), n) for m in range(population) for n in names)


# ---- a report folder ----------------------------------------------------------------------------

def report_files(out) -> tuple[Path, Path]:
    """(table, CSV) of a report folder."""
    return Path(out) / REPORT_TABLE, Path(out) / REPORT_CSV
