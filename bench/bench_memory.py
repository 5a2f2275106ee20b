"""Long games against a random player: completion, peak memory and short searches.

Plays one full game of AGENT (first) against ``random`` in this process and prints one JSON line:
whether it finished, its length, the agent's moves, thinking time, the moves cut short (fewer
iterations than the budget because the table was full) and the moves searched with a full table,
the largest table seen, and the process's peak resident memory (``ru_maxrss``; one game per process,
so it is the game's).

    PYTHONPATH=. python -m bench.bench_memory reversi mcts:time=1
    PYTHONPATH=. python -m bench.bench_memory chess minimax:time=5 --json results.jsonl
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time

import games
from search_ext.agents import make_agent


def play(game: str, spec: str, seed: int = 0) -> dict:
    info = games.load(game)
    agent = make_agent(spec, info)
    opponent = make_agent(f"random:seed={seed}", info)
    state = info.new_state()
    moves = short = full = 0
    peak_nodes = 0
    iterations = []
    t0 = time.perf_counter()
    thinking = 0.0
    while not state.is_game_over():
        if state.to_move == 0:
            t = time.perf_counter()
            action = agent.choose(state)
            thinking += time.perf_counter() - t
            info_move = agent.last_move or {}
            moves += 1
            short += bool(info_move.get("cut_short"))
            full += bool(info_move.get("memory_full"))
            iterations.append(info_move.get("iterations", 0))
            peak_nodes = max(peak_nodes, getattr(agent.search, "peak_nodes", 0))
        else:
            action = opponent.choose(state)
        state.push(action)
    o = state.outcome()
    iterations.sort()
    return {"game": info.spec, "agent": spec, "finished": True, "plies": state.ply,
            "result": o.binary, "termination": o.termination, "agent_moves": moves,
            "cut_short_moves": short, "full_table_moves": full,
            "median_iterations": iterations[len(iterations) // 2] if iterations else 0,
            "min_iterations": iterations[0] if iterations else 0,
            "peak_nodes": peak_nodes, "node_limit": getattr(agent.search, "node_limit", None),
            "thinking_s": round(thinking, 1), "wall_s": round(time.perf_counter() - t0, 1),
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("game")
    p.add_argument("agent")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", default=None, help="append the result line to this file")
    args = p.parse_args(argv)
    row = play(args.game, args.agent, args.seed)
    line = json.dumps(row)
    print(line, flush=True)
    if args.json:
        with open(args.json, "a") as f:          # one line per run, appended whole
            f.write(line + "\n")
            f.flush()
            os.fsync(f.fileno())
    return 0


if __name__ == "__main__":
    sys.exit(main())
