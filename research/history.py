"""History conflicts found by random playouts.

A search shares one node between two states with the same key, so two such states must agree on
everything the search reads: the legal actions, the terminal status and outcome (result and f_t),
and, action by action, the key and terminal status of the child. This script plays seeded random
playouts of every registered game and counts the keys whose states disagree (a "history conflict":
the same key reached by two histories that do not have the same future).

The key is ``state.search_key`` (the position hash with the repetition-relevant history folded in)
where the build has one, else ``state.zobrist_hash`` (the key the searches used before).

    PYTHONPATH=. python -m research.history [--playouts N] [--games chess,tapatan] [--seek 0.5]
"""
from __future__ import annotations

import argparse
import random
import sys
import time

import games


# default playouts per game: many in the small games, fewer in the slow wide ones
PLAYOUTS = {"tic_tac_toe": 20000, "tapatan": 20000, "tsoro_yematatu": 20000, "five_field_kono": 5000,
            "alquerque": 5000, "breakthrough": 5000, "reversi": 2000, "chess": 2000, "xiangqi": 2000,
            "international_draughts": 2000, "lines_of_action": 2000, "connect6": 200, "havannah": 200,
            "outer_open_gomoku": 200}


def key_of(state) -> int:
    return getattr(state, "search_key", None) if hasattr(state, "search_key") else state.zobrist_hash


def signature(state) -> tuple:
    legal = tuple(state.legal_actions_list())
    over = state.is_game_over()
    outcome = None
    if over:
        o = state.outcome()
        outcome = (o.binary, round(o.score, 9))
    children = []
    for a in legal:
        state.push(a)
        children.append((key_of(state), state.is_game_over()))
        state.pop()
    # digests keep the memory small (Python's hash of tuples of ints is deterministic)
    return hash(legal), over, outcome, hash(tuple(children)), legal


def conflicts(spec: str, playouts: int, seed: int, seek: float = 0.0) -> dict:
    """``seek``: probability, at each move, of playing (when there is one) a move to a position
    (``zobrist_hash``: the position without its history) already seen in some playout: such playouts
    reach the same position by different histories far more often than uniform ones."""
    rng = random.Random(seed)
    seen: dict[int, tuple] = {}
    bad: dict[str, set] = {"legal": set(), "terminal": set(), "outcome": set(), "children": set()}
    states = 0
    t0 = time.perf_counter()
    visited = set()
    for _ in range(playouts):
        s = games.new_state(spec)
        while True:
            visited.add(s.zobrist_hash)
            sig = signature(s)
            legal = sig[4]
            sig = sig[:4]
            states += 1
            k = key_of(s)
            old = seen.setdefault(k, sig)
            if old != sig:
                for name, i in (("legal", 0), ("terminal", 1), ("outcome", 2), ("children", 3)):
                    if old[i] != sig[i]:
                        bad[name].add(k)
            if s.is_game_over():
                break
            if seek > 0 and rng.random() < seek:
                back = []
                for a in legal:
                    s.push(a)
                    if s.zobrist_hash in visited:
                        back.append(a)
                    s.pop()
                if back:
                    s.push(rng.choice(back))
                    continue
            s.push(rng.choice(legal))
    keys = set().union(*bad.values())
    return {"game": spec, "playouts": playouts, "seek": seek, "states": states, "distinct_keys": len(seen),
            "conflicting_keys": len(keys), **{f"by_{k}": len(v) for k, v in bad.items()},
            "seconds": round(time.perf_counter() - t0, 1)}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--playouts", type=int, default=None,
                   help="playouts per game (default: by game, see PLAYOUTS)")
    p.add_argument("--games", default=",".join(games.names()))
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--seek", type=float, default=0.0,
                   help="probability of a move back to a position seen in the playout (0: uniform)")
    p.add_argument("--json", default=None, help="write the rows to this file")
    args = p.parse_args(argv)
    rows = []
    for spec in args.games.split(","):
        name = spec.partition("(")[0]
        r = conflicts(spec, args.playouts or PLAYOUTS.get(name, 1000), args.seed, args.seek)
        rows.append(r)
        print(f"{r['game']:<22} {r['conflicting_keys']:>6} conflicting keys "
              f"(legal {r['by_legal']}, terminal {r['by_terminal']}, outcome {r['by_outcome']}, "
              f"children {r['by_children']}) in {r['states']} states, {r['seconds']} s", flush=True)
    if args.json:
        from training.fileio import write_json
        write_json(args.json, rows, indent=1, sort_keys=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
