"""Match results in SQLite (the standard library's ``sqlite3``): one row per finished match.

Schema (table ``matches``)::

    id           INTEGER PRIMARY KEY
    match_key    TEXT UNIQUE   -- what the match is: stage|game|agent A|agent B|seat|index|seed
    stage        TEXT          -- 'rank', 'early_vs_final' or 'evaluate'
    game         TEXT          -- game spec
    algorithm    TEXT          -- evaluate: the balancing algorithm under test (else NULL)
    budget       TEXT          -- evaluate: its budget, e.g. 'time=0.1' or 'iterations=50'
    agent_a      TEXT          -- full agent spec of A (the player under test / the first net)
    agent_b      TEXT
    net_a, net_b TEXT          -- the networks' labels (e.g. 'm03@30m'), NULL without a network
    a_first      INTEGER       -- 1 when A moved first
    moves        TEXT          -- the game record in the game's notation, space separated
    result       INTEGER       -- b_t, first player's point of view
    score        REAL          -- f_t of the final state, first player's point of view
    a_result     INTEGER       -- b_t from A's point of view
    a_score      REAL          -- f_t from A's point of view
    plies        INTEGER
    seconds_a    REAL          -- A's thinking time, whole game
    seconds_b    REAL
    seed         INTEGER
    finished     TEXT          -- ISO time
    opponent     TEXT          -- evaluate: the opponent kind, 'pool' or 'mcts' (else NULL)
    opponent_budget TEXT       -- evaluate: the opponent's budget, e.g. 'time=1'
    opening      TEXT          -- the random opening both seats of the pairing played ('' for none)
    opening_index INTEGER      -- which opening of the pairing (game index // 2)
    unit         TEXT          -- the independent unit: network pair x opening
    proofs       TEXT          -- JSON: when the game was decided, per best-first seat ('a', 'b'):
                               -- ply (first proven root, or null), sign, moves, won_moves,
                               -- proven_choices (descent.gamerecord.ProofNote); NULL for games
                               -- played before it was recorded

Databases written before the last columns existed are migrated when opened (columns added,
``opponent``/``opponent_budget`` filled in from each evaluate row's key and opponent spec, ``unit``
set to the network pair: without random openings, all games of a pair count as one unit).

A match aborted because an outside engine failed goes to table ``aborted`` (key, agents, moves,
plies, reason) instead: it is never scored, and a rerun plays it again.

A match is inserted once, when it is finished, in one transaction: a killed run loses only the
matches in progress, and rerunning skips every key already present (never a duplicate).
"""
from __future__ import annotations

import math
import sqlite3
import time
from pathlib import Path

from games import validate as v
from games.errors import GameError
from games.registry import parse_spec

SCHEMA = """
CREATE TABLE IF NOT EXISTS matches (
    id INTEGER PRIMARY KEY,
    match_key TEXT NOT NULL UNIQUE,
    stage TEXT NOT NULL,
    game TEXT NOT NULL,
    algorithm TEXT,
    budget TEXT,
    agent_a TEXT NOT NULL,
    agent_b TEXT NOT NULL,
    net_a TEXT,
    net_b TEXT,
    a_first INTEGER NOT NULL,
    moves TEXT NOT NULL,
    result INTEGER NOT NULL,
    score REAL NOT NULL,
    a_result INTEGER NOT NULL,
    a_score REAL NOT NULL,
    plies INTEGER NOT NULL,
    seconds_a REAL,
    seconds_b REAL,
    seed INTEGER,
    finished TEXT,
    opponent TEXT,
    opponent_budget TEXT,
    opening TEXT,
    opening_index INTEGER,
    unit TEXT,
    proofs TEXT
);
CREATE INDEX IF NOT EXISTS matches_stage ON matches (stage, game, algorithm, budget);
CREATE TABLE IF NOT EXISTS aborted (
    id INTEGER PRIMARY KEY,
    match_key TEXT NOT NULL,
    stage TEXT,
    game TEXT,
    agent_a TEXT,
    agent_b TEXT,
    moves TEXT,
    plies INTEGER,
    reason TEXT,
    finished TEXT
);
"""

LEGACY_COLUMNS = ("match_key", "stage", "game", "algorithm", "budget", "agent_a", "agent_b", "net_a",
                  "net_b", "a_first", "moves", "result", "score", "a_result", "a_score", "plies",
                  "seconds_a", "seconds_b", "seed", "finished")
NEW_COLUMNS = {"opponent": "TEXT", "opponent_budget": "TEXT", "opening": "TEXT",
               "opening_index": "INTEGER", "unit": "TEXT", "proofs": "TEXT"}

COLUMNS = LEGACY_COLUMNS + tuple(NEW_COLUMNS)


class ResultsError(GameError):
    """A results database that cannot be opened or is not one of ours."""


# What report reads of an evaluate row (games.validate): a bad row is refused, naming it.
def _budget_ok(b):
    k, eq, x = b.partition("=")
    if not eq or k not in ("time", "iterations") or v.REAL_TEXT.fullmatch(x.strip()) is None:
        return f"{b!r} is not time=SECONDS or iterations=N"
    return None if math.isfinite(float(x)) and float(x) > 0 else f"{b!r} is not a positive budget"


def _game_ok(g):
    try:
        parse_spec(g)
    except GameError as exc:
        return str(exc)
    return None


EVALUATE_ROW = v.Record({"game": v.Where(v.Str(256, empty=False), _game_ok), "algorithm": v.Str(4096, empty=False),
                         "budget": v.Where(v.Str(64, empty=False), _budget_ok),
                         "a_result": v.Int(-1, 1), "a_score": v.Real(-1.0, 1.0)})


class ResultsDB:
    def __init__(self, path, readonly: bool = False):
        """Open (creating it if needed) a results database; ``readonly``: open an existing one
        with ``mode=ro`` and never write to it (no journal switch, no table created)."""
        self.path = Path(path)
        self._missing: set = set()
        if readonly:
            self.conn = v.open_sqlite_readonly(self.path, ResultsError, ("matches",),
                                               f"results database {self.path}")
            cols = {r[1] for r in self.conn.execute("PRAGMA table_info(matches)")}
            if set(LEGACY_COLUMNS) - cols:
                self.conn.close()
                raise ResultsError(f"{self.path}: table 'matches' lacks columns "
                                   f"{sorted(set(LEGACY_COLUMNS) - cols)}")
            # an older database read without migrating it: the columns it lacks are derived on reading
            self._missing = set(NEW_COLUMNS) - cols
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.conn = sqlite3.connect(self.path, timeout=30)
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.executescript(SCHEMA)
            cols = {r[1] for r in self.conn.execute("PRAGMA table_info(matches)")}
        except sqlite3.DatabaseError as exc:
            raise ResultsError(f"{self.path}: not a usable results database ({exc})") from None
        missing = set(LEGACY_COLUMNS) - cols
        if missing:
            raise ResultsError(f"{self.path}: table 'matches' lacks columns {sorted(missing)}")
        if set(NEW_COLUMNS) - cols:
            self._migrate(cols)

    def _migrate(self, cols: set) -> None:
        """Add the columns of the current schema to an older database, in one transaction."""
        try:
            with self.conn:
                for c, t in NEW_COLUMNS.items():
                    if c not in cols:
                        self.conn.execute(f"ALTER TABLE matches ADD COLUMN {c} {t}")
                rows = self.conn.execute("SELECT id, stage, match_key, agent_b, net_a, net_b FROM matches "
                                         "WHERE unit IS NULL").fetchall()
                for rid, stage, key, agent_b, net_a, net_b in rows:
                    opp = opp_budget = None
                    if stage == "evaluate":
                        opp = "mcts" if str(agent_b).startswith("mcts") else "pool"
                        parts = key.split("|")
                        opp_budget = parts[6] if len(parts) > 6 else None
                    self.conn.execute("UPDATE matches SET opponent = ?, opponent_budget = ?, opening = '', "
                                      "unit = ? WHERE id = ?", (opp, opp_budget, f"{net_a}|{net_b}|", rid))
        except sqlite3.DatabaseError as exc:
            raise ResultsError(f"{self.path}: cannot migrate to the current schema ({exc})") from None

    def keys(self, stage: str | None = None) -> set:
        q = "SELECT match_key FROM matches" + (" WHERE stage = ?" if stage else "")
        return {r[0] for r in self.conn.execute(q, (stage,) if stage else ())}

    def insert(self, row: dict) -> bool:
        """Insert one finished match; False when its key was already there."""
        row = dict(row)
        row.setdefault("finished", time.strftime("%Y-%m-%dT%H:%M:%S"))
        values = [row.get(c) for c in COLUMNS]
        with self.conn:
            cur = self.conn.execute(
                f"INSERT OR IGNORE INTO matches ({', '.join(COLUMNS)}) "
                f"VALUES ({', '.join('?' * len(COLUMNS))})", values)
        return cur.rowcount == 1

    def insert_aborted(self, row: dict, reason: str) -> None:
        """Record a match that was aborted (an outside engine failed) in table ``aborted``: never
        in ``matches``, so it is never scored and a rerun plays it again."""
        keys = ("match_key", "stage", "game", "agent_a", "agent_b", "moves", "plies")
        with self.conn:
            self.conn.execute(
                f"INSERT INTO aborted ({', '.join(keys)}, reason, finished) VALUES "
                f"({', '.join('?' * (len(keys) + 2))})",
                [row.get(k) for k in keys] + [reason, time.strftime("%Y-%m-%dT%H:%M:%S")])

    def aborted(self) -> list[dict]:
        """The aborted matches, oldest first (empty for a database without the table)."""
        try:
            cur = self.conn.execute("SELECT match_key, stage, game, agent_a, agent_b, moves, plies, reason, "
                                    "finished FROM aborted ORDER BY id")
        except sqlite3.DatabaseError:
            return []
        cols = [d[0] for d in cur.description]
        return [dict(zip(cols, r)) for r in cur]

    def _derived(self, row: dict) -> dict:
        """The columns an older database lacks, as ``_migrate`` would fill them in (the first five
        together: they came in one version; ``proofs`` stays NULL)."""
        if not self._missing - {"proofs"}:
            return {**row, "proofs": row.get("proofs")}
        opp = opp_budget = None
        if row.get("stage") == "evaluate":
            opp = "mcts" if str(row.get("agent_b")).startswith("mcts") else "pool"
            parts = str(row.get("match_key")).split("|")
            opp_budget = parts[6] if len(parts) > 6 else None
        out: dict[str, object] = {c: None for c in NEW_COLUMNS}
        out.update(opponent=opp, opponent_budget=opp_budget, opening="",
                   unit=f"{row.get('net_a')}|{row.get('net_b')}|")
        return {**out, **{k: v for k, v in row.items() if k not in out}}

    def rows(self, stage: str | None = None, game: str | None = None) -> list[dict]:
        cols = tuple(c for c in COLUMNS if c not in self._missing)
        q = f"SELECT {', '.join(cols)} FROM matches WHERE 1=1"
        args: list = []
        if stage:
            q += " AND stage = ?"
            args.append(stage)
        if game:
            q += " AND game = ?"
            args.append(game)
        q += " ORDER BY id"
        rows = (dict(zip(cols, r)) for r in self.conn.execute(q, args))
        return [self._derived(r) for r in rows] if self._missing else list(rows)

    def checked_rows(self, stage: str | None = None, game: str | None = None) -> list[dict]:
        """``rows``, each checked against ``EVALUATE_ROW`` (``ResultsError`` naming the row)."""
        return [EVALUATE_ROW(r, f"{self.path}: row {i + 1} ({r.get('match_key')!r})", ResultsError)
                for i, r in enumerate(self.rows(stage, game))]

    def close(self):
        self.conn.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
