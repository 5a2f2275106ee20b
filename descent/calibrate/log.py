"""A calibration's files: the per-game log (``<run>/calibrations/<name>.games.jsonl``), its lock,
the log of aborted games, and the result (``<name>.json``), named from the settings (``names``).

Every finished game is appended (and fsynced) to the log, keyed by (budget, k) where k counts the
games at that budget; the design is a pure function of that log, so a rerun after a kill replays it
and continues with the missing games of its round, never repeating one.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from training import fileio, layout
from descent.calibrate.design import CalibrationError, Settings, digest

def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_")[:40]


def stems(s: Settings) -> tuple[str, str]:
    """(result stem, game-log stem): the result is named by the design, the log by the games."""
    alg = _slug(s.algorithm.partition(":")[0])
    vs = "pool" if s.against == "pool" else _slug(s.against.partition(":")[0])
    base = f"{alg}-vs-{vs}"
    return f"{base}-{s.metric}{s.target:+g}-{digest(s.design_key())}", f"{base}-{digest(s.game_key())}"


def names(s: Settings) -> tuple[str, str]:
    """(result file name, log file name) inside ``<run>/calibrations``."""
    res, log = files(".", s)
    return res.name, log.name


def read_log(path: Path) -> dict:
    """{(budget, k): record}; a torn last line (a kill during a write) is dropped and the file
    rewritten without it (atomically). Call it holding the log's lock (``lock_log``): the rewrite
    would lose a line another process appends meanwhile."""
    path = Path(path)
    games: dict = {}
    if not path.exists():
        return games
    raw = path.read_bytes()
    good, dirty = [], False
    for line in raw.split(b"\n"):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
            key = (rec["budget"], int(rec["k"]))
            float(rec["result"]), float(rec["score"])
        except (ValueError, KeyError, TypeError):
            dirty = True
            continue
        if key in games:
            dirty = True
            continue
        games[key] = rec
        good.append(line)
    if dirty:
        fileio.write_bytes(path, b"".join(x + b"\n" for x in good))
    return games


def append_log(path: Path, rec: dict) -> None:
    """One finished game, appended whole and fsynced (``training.fileio.append_json``)."""
    fileio.append_json(path, rec, sort_keys=True)


def lock_log(log_path: Path) -> fileio.FileLock:
    """The exclusive lock on a calibration's game log, ``<log>.lock`` (released when the process
    ends, even by SIGKILL): it covers the log and the results computed from it.
    ``CalibrationError`` if another process holds it."""
    lock = layout.calibration_lock(log_path)
    return fileio.FileLock(lock, timeout=0, error=CalibrationError,
                           busy=f"{lock.parent}: another process is running this calibration "
                                f"(lock {lock.name} is held); wait for it or stop it")


def files(run_dir, s: Settings) -> tuple[Path, Path]:
    """(result, game log) of a calibration in a run (``training.layout.calibration_files``)."""
    return layout.calibration_files(run_dir, *stems(s))


def aborted_log(log_path: Path) -> Path:
    """The log of a calibration's aborted games (an outside engine failed), beside its game log."""
    return layout.calibration_aborted_log(log_path)
