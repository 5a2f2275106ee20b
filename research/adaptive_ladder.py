"""The adaptive level against the ladder as simulated players.

Each simulated player is a rung of the ladder of ``research.ladder`` for the game: OpenSpiel's MCTS bot
with random rollouts at a fixed simulation count (``_OSBot``, same settings) where OpenSpiel has the
game at this size, this project's MCTS at fixed iterations (``mcts:iterations=N``) for
``reversi(size=6)``. It plays ``--games`` games against ``Opponent(level="adaptive")`` with the
shipped networks and calibration (no ``--net``: the shipped fallback; a fresh profile per player in
a temporary data folder), seats alternating. With OpenSpiel both engines advance together and every
ply is checked by ``research.ladder.legal_map`` (legal moves, player to move, end and winner;
``LadderMismatch`` otherwise). ``--seeds`` independent fresh profiles per player (seeds 0..N-1) run in ``--workers``
processes, each playing up to ``--in-flight`` profiles at once through ``descent.batched.drive``
(the opponents' moves share one network call per round; a profile's own games follow one another).
``--person AGENT`` (repeatable) replaces the ladder by any agent spec, an outside engine
included (``uci:/usr/games/fairy-stockfish,Skill Level=0,nodes=1000``); a game in which it fails is
recorded as aborted and never scored. Reported per player, pooled over the profiles: the adaptive opponent's score (win 1, draw
1/2, loss 0) over all games and over each profile's second half, each with its 95% radius, and
whether it lies within 50 +- 10 points; and how often the opponent changed rung. Usage:

    nice -n 10 python -m research.adaptive_ladder --sims 1000,400,100 --games 40 --seeds 3 \\
        --json research/results_adaptive_ladder.json
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import platform
import sys
import tempfile
import time
import zlib


from research.ladder import OPENSPIEL, LadderMismatch, _os_winner, _OSBot, legal_map  # noqa: E402

GAME = "breakthrough(rows=6,cols=6)"
IN_FLIGHT = 16           # profiles in flight per worker (one network call per round across them)
TABLE_MB = 1024.0 / (2 * IN_FLIGHT)   # each search table's share of descent.batched's per-process cap


def one_player(game: str, sims, n_games: int, seed: int, echo=print) -> list[dict]:
    """``n_games`` games of the ladder's MCTS at ``sims`` simulations (OpenSpiel's, or ours for a game
    OpenSpiel lacks) against one fresh adaptive profile, one game after the other (``profile_steps``
    run alone)."""
    from descent import batched
    return batched.run_one(profile_steps(game, sims, n_games, seed, echo, batch=False))


def profile_steps(game: str, sims, n_games: int, seed: int, echo=print, batch: bool = True,
                  table_mb: float = TABLE_MB, make_agent=None):
    """``one_player`` as a coroutine for ``descent.batched.drive``: the profile's games follow one
    another (each starts at the budget the last one left), and the moves of the adaptive opponent
    (and of a ``--person`` agent with a network) go through ``descent.batched.move``, so profiles
    in flight share one network call per round. The opponent's table is capped at ``table_mb``
    (the driver's share of the process's table memory), one by one as in a batch.
    ``make_agent(spec, game)``: how the person's agent is built (default
    ``descent.networks.make_agent``)."""
    from descent import batched
    from descent.api import Opponent
    from descent.protocols.outside import EngineError
    if make_agent is None:
        from descent.networks import make_agent
    if isinstance(sims, str):               # --person AGENT: any agent spec, an outside engine included
        os_game, person = None, make_agent(sims, game)
    elif OPENSPIEL[game]:
        import pyspiel
        name, params = OPENSPIEL[game]
        os_game = pyspiel.load_game(name, params)
        person = _OSBot(os_game, sims)
    else:                                   # the game's ladder is this project's MCTS
        os_game, person = None, make_agent(f"mcts:iterations={sims}", game)
    tag = f"mcts{sims}" if isinstance(sims, int) else f"agent{zlib.crc32(sims.encode()) % 10 ** 8}"
    bot = Opponent(game, level="adaptive", player=f"openspiel-{tag}-{seed}", seed=seed)
    out = []
    for g in range(n_games):
        bot.new_game()
        if batched.steppable(bot.agent):
            bot.agent = batched.fork(bot.agent, table_mb)
        seat = g % 2
        person.reset(seed * 100_003 + g)
        ref = os_game.new_initial_state() if os_game is not None else None
        its, rung = bot.adaptive.iterations, bot.adaptive.entry["rung"]
        clock = 0.0
        aborted = None
        while not bot.is_over():
            if ref is None:
                who = person if bot.state.to_move == seat else bot.agent
                try:
                    action, dt = yield from batched.move(who, bot.state, batch)
                except EngineError as exc:      # the outside engine failed: not scored
                    aborted = str(exc)
                    break
                clock += dt
                bot.push(action)
                continue
            if ref.is_terminal():
                raise LadderMismatch(f"{game} at ply {bot.state.ply}: game over in OpenSpiel only")
            mapping = legal_map(game, bot.state, ref)
            if bot.state.to_move == seat:
                t0 = time.perf_counter()
                os_action = person.choose_os(ref)
                clock += time.perf_counter() - t0
                back = [k for k, v in mapping.items() if v == os_action]
                if len(back) != 1:
                    raise LadderMismatch(f"{game} at ply {bot.state.ply}: OpenSpiel's move {os_action} "
                                         f"has no legal twin here")
                bot.push(back[0])
            else:
                action, dt = yield from batched.move(bot.agent, bot.state, batch)
                clock += dt
                bot.push(action)
                os_action = mapping[action]
            ref.apply_action(os_action)
        if aborted:
            out.append({"game": g, "person_seat": seat, "aborted": aborted})
            echo(f"  {tag} game {g + 1}: aborted, not scored ({aborted})", flush=True)
            continue
        w = bot.outcome().winner
        if ref is not None and (not ref.is_terminal() or _os_winner(ref) != w):
            raise LadderMismatch(f"{game}: the ends or winners differ (ours {w})")
        bot_score = 0.5 if w is None else 0.0 if w == seat else 1.0
        bot.end_game(seat)
        rec = {"game": g, "person_seat": seat, "iterations": its, "rung": rung,
               "rung_label": bot.adaptive.rungs[rung]["label"], "bot_score": bot_score,
               "plies": bot.state.ply, "seconds": round(clock, 3)}
        out.append(rec)
        echo(f"  {tag} game {g + 1}: {rec['rung_label']} iterations={its} score={bot_score} "
             f"[{rec['seconds']:.1f} s]", flush=True)
    return out


def play_profiles(tasks, in_flight: int = IN_FLIGHT, echo=None, make_agent=None):
    """The profiles ``(game, sims, n_games, seed)`` in this process, ``in_flight`` at a time
    (``descent.batched.drive``); yield ``(sims, seed, run)`` as each profile ends."""
    from descent import batched
    tasks = list(tasks)
    quiet = echo or (lambda *a, **k: None)
    table_mb = batched.table_share(batched.DEFAULT_MEMORY_MB, 2 * max(1, min(in_flight, len(tasks))))
    jobs = ((t, lambda t=t: profile_steps(*t, echo=quiet, table_mb=table_mb, make_agent=make_agent))
            for t in tasks)
    for (game, sims, n_games, seed), run in batched.drive(jobs, in_flight):
        yield sims, seed, run


def summary(runs: list[list[dict]]) -> dict:
    """Pooled over the profiles: all games, and each profile's second half."""
    from descent.stats import mean_ci
    res = {}
    aborted = sum(1 for r in runs for g in r if g.get("aborted"))
    runs = [[g for g in r if not g.get("aborted")] for r in runs]      # aborted games never count
    for key, xs in (("all", [g for r in runs for g in r]),
                    ("second_half", [g for r in runs for g in r[len(r) // 2:]])):
        m, r = mean_ci([g["bot_score"] for g in xs])
        res[key] = {"games": len(xs), "score": m, "radius": r, "within_10_points": abs(m - 0.5) <= 0.10}
    res["aborted"] = aborted
    res["final_iterations"] = [r[-1]["iterations"] if r else None for r in runs]
    res["final_rung"] = [r[-1]["rung_label"] if r else None for r in runs]
    res["rung_changes"] = [sum(1 for a, b in zip(r, r[1:]) if a["rung"] != b["rung"]) for r in runs]
    return res


def _chunk(args):
    tasks, in_flight = args
    return list(play_profiles(tasks, in_flight))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--game", default=GAME, choices=sorted(OPENSPIEL))
    ap.add_argument("--sims", default="100,400,1000", help="simulation counts of the simulated players")
    ap.add_argument("--games", type=int, default=30, help="games per simulated player and profile (seats alternate)")
    ap.add_argument("--seeds", type=int, default=1, help="independent fresh profiles per player (seeds 0..N-1)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--in-flight", type=int, default=IN_FLIGHT,
                    help="profiles in flight per worker (one network call per round across them)")
    ap.add_argument("--person", action="append", default=[], metavar="AGENT",
                    help="a simulated player by agent spec instead of the ladder's MCTS, e.g. "
                         "'uci:/usr/games/fairy-stockfish,Skill Level=0,nodes=1000' (repeatable)")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    work = tempfile.mkdtemp(prefix="bench_adaptive_ladder_")
    os.environ["DESCENT_DATA_DIR"] = os.path.join(work, "data")      # fresh profiles
    sims_list = [int(s) for s in args.sims.split(",") if s] if not args.person else list(args.person)
    tasks = [(args.game, sims, args.games, seed) for sims in sims_list for seed in range(args.seeds)]
    t0 = time.perf_counter()
    runs: dict = {}
    k = max(1, args.in_flight)
    chunks = [(tasks[i:i + k], k) for i in range(0, len(tasks), k)]
    with mp.get_context("spawn").Pool(min(args.workers, len(chunks))) as pool:
        done = [r for chunk in pool.imap_unordered(_chunk, chunks) for r in chunk]
    for sims, seed, run in done:
        runs.setdefault(sims, {})[seed] = run
        scored = [g for g in run if not g.get("aborted")]
        print(f"  {sims if isinstance(sims, str) else f'mcts{sims}'} profile {seed}: {len(scored)} games, "
              f"adaptive's score {100 * sum(g['bot_score'] for g in scored) / max(1, len(scored)):.1f}%  [{time.perf_counter() - t0:.0f} s]",
              flush=True)
    out = {"game": args.game, "games_per_profile": args.games, "profiles": args.seeds, "players": {},
           "machine": platform.platform(), "python": platform.python_version(),
           "seconds": time.perf_counter() - t0}
    for sims in sims_list:
        label, rs = (sims if isinstance(sims, str) else f"mcts{sims}"), [runs[sims][s] for s in range(args.seeds)]
        res = summary(rs)
        person = sims if isinstance(sims, str) else (f"OpenSpiel MCTS, {sims} simulations, random rollouts" if OPENSPIEL[args.game] else
                  f"this project's MCTS (mcts:iterations={sims}), random playouts")
        out["players"][label] = {"person": person,
                                 "summary": res, "runs": rs,
                                 "seconds": sum(g.get("seconds", 0) for r in rs for g in r)}
        a, h = res["all"], res["second_half"]
        print(f"{label:<9} adaptive's score, all {a['games']} games: {100 * a['score']:.1f}% ± "
              f"{100 * a['radius']:.1f}; second halves ({h['games']}): {100 * h['score']:.1f}% ± "
              f"{100 * h['radius']:.1f} -> {'within' if h['within_10_points'] else 'NOT within'} 50 ± 10; "
              f"final {res['final_rung']} iterations={res['final_iterations']} rung changes "
              f"{res['rung_changes']}" + (f"; {res['aborted']} game(s) aborted, not scored" if res["aborted"] else ""),
              flush=True)
    if args.json:
        from training.fileio import write_json
        write_json(args.json, out, indent=1, sort_keys=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
