"""Take the fixed-seed game records that ``tests/test_core_records.py`` replays.

The records were taken with the code of commit 701f257 (before the two Descent implementations,
``training/selfplay.pyx`` and ``search_ext/bestfirst.pyx``, became one core): rerunning this script
on a later commit must write the same file, byte for byte, except for the self-play pool's
breakthrough games, retaken when the two walks became one: the pool no longer values a terminal
state again each time an expansion reaches it (with breakthrough's depth scores that value depends
on the ply; docs/ALGORITHMS.md, "One walk"). Run from the repository root:

    python tests/data/make_core_records.py            # writes tests/data/core_records.json
    python tests/data/make_core_records.py --check    # compares instead (what the test does)

Every evaluator here is a pure function of the encoded state (a CRC of its bytes), so the records
depend on neither the batch's composition nor the BLAS build.
"""
from __future__ import annotations

import hashlib
import json
import sys
import zlib
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
OUT = HERE / "core_records.json"

POOL_GAMES = ["tic_tac_toe", "breakthrough(rows=5,cols=5)", "reversi(size=6)", "tapatan",
              "havannah(base=4)"]
# (name, pool keyword arguments, per-game (e, epsilon))
POOL_CASES = [
    ("plain", {"iterations": 30, "games_in_flight": 3}, (0.1, -1.0)),
    ("greedy", {"iterations": 20, "games_in_flight": 2}, (0.0, 0.2)),
    ("compacting", {"iterations": 40, "games_in_flight": 2, "compact_at": 150}, (0.2, -1.0)),
    ("full", {"iterations": 60, "games_in_flight": 2, "max_nodes": 400}, (0.1, -1.0)),
]
SEARCH_GAMES = ["tic_tac_toe", "breakthrough(rows=5,cols=5)", "reversi(size=6)", "five_field_kono", "tsoro_yematatu"]
# (name, BestFirstSearch keyword arguments for both players, iterations per move)
SEARCH_CASES = [
    ("minimax", {"rule": "minimax"}, 40),
    ("descent", {"rule": "minimax", "descent": True}, 25),
    ("minibal_n", {"rule": "minibal_n"}, 40),
    ("minibal_plus", {"rule": "minibal_plus", "decision": "safe"}, 40),
    ("proven", {"rule": "minibal_plus", "take_proven_wins": True}, 60),
    ("small_table", {"rule": "minimax", "max_nodes": 200}, 80),
]


def crc_values(batch: np.ndarray) -> np.ndarray:
    """A deterministic 'network': each state's value from the CRC32 of its encoding."""
    flat = np.ascontiguousarray(batch, dtype=np.float32).reshape(len(batch), -1)
    out = np.empty(len(batch), dtype=np.float32)
    for i, row in enumerate(flat):
        out[i] = ((zlib.crc32(row.tobytes()) % 2001) - 1000) / 1000.0 * 0.9
    return out


def digest(a) -> str:
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()[:24]


def pool_pool_class():
    try:
        from search_ext.selfplay import SelfPlayPool
    except ImportError:                     # before the move to search_ext/
        from training.selfplay import SelfPlayPool
    return SelfPlayPool


def pool_records() -> dict:
    from games.registry import load
    SelfPlayPool = pool_pool_class()
    out = {}
    for spec in POOL_GAMES:
        info = load(spec)
        for name, kw, (e, eps) in POOL_CASES:
            kw = dict(kw)
            kw.setdefault("max_nodes", 2_000_000)
            pool = SelfPlayPool(info, crc_values, **kw)
            seeds = iter(range(101, 105))
            games = []

            def new_game():
                s = next(seeds, None)
                return None if s is None else (s, e, eps, s)

            pool.run(new_game, games.append)
            games.sort(key=lambda g: g["tag"])
            out[f"{spec}/{name}"] = [
                {"seed": g["tag"], "moves": [int(a) for a in g["moves"]], "result": g["result"],
                 "plies": g["plies"], "examples": int(len(g["y"])), "x": digest(g["x"]), "y": digest(g["y"]),
                 "root_values": digest(g["root_values"]), "short_moves": g["short_moves"],
                 "iterations": g["iterations"]}
                for g in games]
    return out


def search_records() -> dict:
    from games.registry import load
    from search_ext.bestfirst import BestFirstSearch
    from search_ext.evaluators import CallableEvaluator
    out = {}
    for spec in SEARCH_GAMES:
        info = load(spec)
        for name, kw, iters in SEARCH_CASES:
            players = [BestFirstSearch(info, evaluator=CallableEvaluator(crc_values, info.planes_shape), **kw)
                       for _ in range(2)]
            s = info.new_state()
            moves, analyses = [], []
            while not s.is_game_over() and len(moves) < 200:
                p = players[s.to_move]
                p.search(s, iterations=iters)
                rows = p.analyse(s)
                analyses.append([[r["action"], round(float(r["value"]), 6), r["completion"], r["resolved"],
                                  r["count"]] for r in rows])
                a = p.best_action(s)
                moves.append(int(a))
                s.push(a)
            out[f"{spec}/{name}"] = {"moves": moves, "analysis": hashlib.sha256(
                json.dumps(analyses).encode()).hexdigest()[:24], "size": [int(p.size) for p in players]}
    return out


def records() -> dict:
    return {"selfplay_pool": pool_records(), "best_first": search_records()}


def main(argv) -> int:
    rec = records()
    text = json.dumps(rec, indent=1, sort_keys=True) + "\n"
    if "--check" in argv:
        old = json.loads(OUT.read_text())
        bad = [f"{part}/{k}" for part in old for k in old[part] if rec[part].get(k) != old[part][k]]
        print("\n".join(bad) or "same records")
        return 1 if bad else 0
    OUT.write_text(text)
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
