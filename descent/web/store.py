"""The games of ``descent serve`` kept on disk, so that a restart of the server loses none.

One SQLite file (``games.sqlite3`` in the ``serve`` folder of the data directory, beside the
adaptive profiles: ``$DESCENT_DATA_DIR``, else ``$XDG_DATA_HOME/descent``, else
``~/.local/share/descent``), one row per game: what the game was started with (the game, the
level or the Elo asked for, the player's name, the seat, the seed), the owner cookie, the moves in
the game's notation, whether it was resigned, over or closed, and when it was started, last changed
and last asked about. The record is enough to rebuild the game: the server replays the moves on a
new opponent of the same setting.

Every change is one transaction (WAL journal, ``synchronous=FULL``): a row holds either the moves
before a change or after it, so a crash (``kill -9``, a power cut) in the middle of a write loses
at most the move in flight. One connection, used under a lock: the server writes from one thread
(its store pool), a test may read from another.
"""
from __future__ import annotations

import json
import sqlite3
import threading
import time
from pathlib import Path

FILE = "games.sqlite3"
FORMAT = 1

SCHEMA = """
CREATE TABLE IF NOT EXISTS games (
    id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    game TEXT NOT NULL,
    level TEXT NOT NULL,
    elo REAL,
    player TEXT,
    seat INTEGER NOT NULL,
    seed INTEGER NOT NULL,
    moves TEXT NOT NULL DEFAULT '[]',
    resigned INTEGER NOT NULL DEFAULT 0,
    recorded INTEGER NOT NULL DEFAULT 0,
    over INTEGER NOT NULL DEFAULT 0,
    closed INTEGER NOT NULL DEFAULT 0,
    started TEXT NOT NULL,
    updated REAL NOT NULL,
    seen REAL NOT NULL,
    format INTEGER NOT NULL DEFAULT 1
);
CREATE INDEX IF NOT EXISTS games_by_owner ON games (owner, closed, over, updated);
"""

COLUMNS = ("id", "owner", "game", "level", "elo", "player", "seat", "seed", "moves", "resigned",
           "recorded", "over", "closed", "started", "updated", "seen")


def default_path() -> Path:
    from descent.adaptive import data_dir  # lazy: the data directory of the profiles
    return data_dir() / "serve" / FILE


class Store:
    """The games file. ``sqlite3.Error`` and ``OSError`` are the caller's to handle."""

    def __init__(self, path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(self.path), check_same_thread=False, isolation_level=None,
                                   timeout=30)
        self._db.row_factory = sqlite3.Row
        with self._lock:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.executescript(SCHEMA)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def _write(self, sql: str, args: tuple) -> None:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.execute(sql, args)
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def add(self, row: dict) -> None:
        """A new game (``row``: the ``COLUMNS``, ``moves`` a list)."""
        now = time.time()
        full = dict(row, moves=json.dumps(list(row.get("moves") or [])), updated=now, seen=now)
        for k in ("resigned", "recorded", "over", "closed"):
            full[k] = int(bool(full.get(k)))
        self._write(f"INSERT OR REPLACE INTO games ({', '.join(COLUMNS)}) "
                    f"VALUES ({', '.join('?' for _ in COLUMNS)})", tuple(full.get(c) for c in COLUMNS))

    def update(self, gid: str, moves: list[str], resigned: bool, recorded: bool, over: bool) -> None:
        """The game's moves and state after a change (a move, a reply, an undo, a resignation)."""
        now = time.time()
        self._write("UPDATE games SET moves = ?, resigned = ?, recorded = ?, over = ?, updated = ?, seen = ? "
                    "WHERE id = ?", (json.dumps(list(moves)), int(resigned), int(recorded), int(over),
                                     now, now, gid))

    def seen(self, gid: str) -> None:
        self._write("UPDATE games SET seen = ? WHERE id = ?", (time.time(), gid))

    def close_game(self, gid: str) -> None:
        """The person closed the game: it stays as a record, and is not brought back."""
        self._write("UPDATE games SET closed = 1, updated = ? WHERE id = ?", (time.time(), gid))

    def get(self, gid: str) -> dict | None:
        with self._lock:
            row = self._db.execute("SELECT * FROM games WHERE id = ?", (gid,)).fetchone()
        return _row(row)

    def open_games(self, owner: str, limit: int = 5) -> list[dict]:
        """The owner's games in progress (not over, not closed), the most recently changed first."""
        with self._lock:
            rows = self._db.execute("SELECT * FROM games WHERE owner = ? AND closed = 0 AND over = 0 "
                                    "ORDER BY updated DESC LIMIT ?", (owner, limit)).fetchall()
        return [r for r in (_row(x) for x in rows) if r is not None]


def _row(row) -> dict | None:
    if row is None:
        return None
    out = {k: row[k] for k in row.keys()}
    try:
        moves = json.loads(out["moves"])
    except ValueError:
        moves = []
    out["moves"] = [m for m in moves if isinstance(m, str)] if isinstance(moves, list) else []
    for k in ("resigned", "recorded", "over", "closed"):
        out[k] = bool(out[k])
    return out
