"""The protocol's commands: ``match``, ``rank``, ``evaluate``, ``calibrate``, ``report``, and
``rate-levels`` (the levels' rating table, ``descent.levels``).
"""
from __future__ import annotations

from pathlib import Path

import click

from games import validate
from training import layout
from descent.cli.options import (COUNT, IntRange, UserError, calibration_budget_options, cli,
                                 games_per_pair_option, load_game, opening_plies_option, ray_option, run_dir_of,
                                 seed_option, shipped_option, split_option, workers_option)


@cli.command()
@click.argument("game")
@click.option("--first", "agent_a", required=True, metavar="AGENT",
              help="Agent A, e.g. minibal_plus:time=0.5 (plays first in even games).")
@click.option("--second", "agent_b", required=True, metavar="AGENT", help="Agent B, e.g. mcts:iterations=2000.")
@click.option("--games", "n_games", type=COUNT, default=10, show_default=True)
@workers_option(1, "Worker processes (at most one per game).")
@seed_option
@click.option("--verbose", is_flag=True, help="Print every game's moves.")
@ray_option()
def match(game, agent_a, agent_b, n_games, workers, seed, verbose, ray_address):
    """Play AGENT A against AGENT B, alternating seats; print results with 95% confidence radii.

    An agent is ALGORITHM[:key=value,...]; `descent algorithms` lists them and their keys.
    """
    from tqdm import tqdm  # lazy: CLI start-up (each command loads only its own modules)
    from descent.match import run_match  # lazy: CLI start-up (each command loads only its own modules)
    from descent.stats import MatchSummary  # lazy: CLI start-up (each command loads only its own modules)
    from search_ext.agents import parse_agent  # lazy: CLI start-up (each command loads only its own modules)
    for text in (agent_a, agent_b):
        parse_agent(text)
    info = load_game(game)
    workers = min(workers, n_games)
    records = []
    with tqdm(total=n_games, desc=f"{info.spec}", unit="game", leave=False) as bar:
        for rec in run_match(info.spec, agent_a, agent_b, n_games, workers, seed,
                             ray_address=ray_address):
            records.append(rec)
            bar.update(1)
            if verbose:
                tqdm.write(f"game {rec.index}: {'A' if rec.a_first else 'B'} first, "
                           f"{' '.join(rec.moves)}  -> "
                           + (f"aborted: {rec.aborted}" if rec.aborted else f"A {rec.a_result:+d}"))
    records.sort(key=lambda r: r.index)
    aborted = [r for r in records if r.aborted]
    for r in aborted:
        click.echo(f"game {r.index} aborted after {r.plies} plies, not scored: {r.aborted}", err=True)
    records = [r for r in records if not r.aborted]
    if not records:
        raise UserError(f"every game was aborted ({aborted[0].aborted})")
    s = MatchSummary.from_results([r.a_result for r in records], [r.a_score for r in records])
    click.echo(f"{info.spec}: A = {agent_a}  vs  B = {agent_b}; {s.games} games, seats alternating"
               + (f" ({len(aborted)} more aborted, not scored)" if aborted else ""))
    click.echo(f"  A wins {s.wins} ({100 * s.wins / s.games:.1f}%), draws {s.draws} "
               f"({100 * s.draws / s.games:.1f}%), losses {s.losses} ({100 * s.losses / s.games:.1f}%)")
    g, sc = s.gain_ci, s.score_ci
    assert g is not None and sc is not None        # intervals exist: at least one game was scored
    click.echo(f"  A binary gain {100 * s.gain:+.1f}% [{100 * g.low:+.1f}, {100 * g.high:+.1f}]; "
               f"mean score {s.score:+.3f} [{sc.low:+.3f}, {sc.high:+.3f}] (95%, counting every game "
               f"as independent)")
    mean_plies = sum(r.plies for r in records) / len(records)
    ta = sum(r.seconds_a for r in records) / max(1, sum(r.plies for r in records) / 2)
    tb = sum(r.seconds_b for r in records) / max(1, sum(r.plies for r in records) / 2)
    click.echo(f"  mean length {mean_plies:.1f} plies; about {ta:.3f} s/move (A), {tb:.3f} s/move (B)")
    short = (sum(r.short_a for r in records), sum(r.short_b for r in records))
    full = (sum(r.full_a for r in records), sum(r.full_b for r in records))
    click.echo(f"  moves cut short by a full search table: A {short[0]}, B {short[1]}; "
               f"searched with a full table: A {full[0]}, B {full[1]}")


def print_pools(pools):
    def shown(x):
        return "?" if x is None else str(x)
    if pools.get("given"):
        click.echo(f"pools given, not ranked (no game played): {pools['given']['source']}")
    else:
        click.echo(f"{'rank':>4} {'net':<12} {'score':>6} {'games':>6} {'Elo (95%)':>16}  trained on")
    for r in pools["ranking"]:
        click.echo(f"{r['rank']:>4} {r['net']:<12} {r['score']:>6.3f} {r['games']:>6} "
                   f"{r['elo']:>+8.0f} ± {r['elo_radius']:<5.0f}  "
                   f"{shown(r.get('trained_games'))} games, {shown(r.get('trained_examples'))} examples")
    click.echo("high-level pool (final checkpoints): " + ", ".join(h["net"] for h in pools["high"]))
    click.echo("low-level pool (early checkpoints):  " + ", ".join(h["net"] for h in pools["low"]))
    s = pools.get("split")
    if s:
        click.echo(f"split: weakest high minus strongest low {s['margin_low']:+.0f} to {s['margin_high']:+.0f} "
                   f"Elo (95%, cluster bootstrap over {s['units']} units; same split in "
                   f"{100 * s['same_split']:.0f}% of resamples) -> "
                   + ("pools separated" if s["separated"] else "pools NOT separated: more games per pair "
                      "or a larger population needed"))
    for c in pools.get("early_vs_final", []):
        click.echo(f"  {c['early']} vs {c['final']}: early gain {100 * c['early_gain']:+.0f}% "
                   f"[{100 * c['early_gain_low']:+.0f}, {100 * c['early_gain_high']:+.0f}] over {c['units']} "
                   f"units ({c['games']} games) -> "
                   + {"weaker": "weaker, as expected", "stronger": "STRONGER than its final version",
                      "not separated": "not separated from its final version (interval contains 0)"}[c["verdict"]])


@cli.command()
@click.argument("game")
@click.option("--run", "run", type=click.Path(file_okay=False), default=None,
              help="Training run directory (default: checkpoints/<game>).")
@click.option("--agent", default="minimax:time=1,decision=safe", show_default=True,
              help="The agent every network plays with.")
@games_per_pair_option(16, "Games per pair of networks (and per early/final pair): seat pairs sharing an opening.")
@opening_plies_option()
@workers_option()
@seed_option
@ray_option()
@click.option("--allow-untrained", is_flag=True,
              help="Also rank members whose final checkpoint never saw a self-play game.")
@click.option("--early", default=None, metavar="MILESTONE",
              help="The low pool's milestone (default: the run's first), e.g. 35m of 10m,35m,120m; "
                   "the same as --final keeps the low pool at its final networks (pools closer together).")
@click.option("--final", default=None, metavar="MILESTONE",
              help="The milestone ranked and kept in the high pool (default: the run's last).")
@click.option("--high", default=None, metavar="MEMBERS",
              help="Give the split instead of ranking (no game played): these members' final "
                   "checkpoints are the high pool, e.g. 1,2 (needs --low and --source).")
@click.option("--low", default=None, metavar="MEMBERS",
              help="With --high: these members' early checkpoints are the low pool, e.g. 0,3.")
@click.option("--source", default=None, metavar="TEXT",
              help="With --high: where the given split comes from (kept in pools.json and the report).")
@click.option("--db", "db_path", type=click.Path(dir_okay=False), default=None,
              help="Play into and read this results database instead of the run's results.db.")
@click.option("--pools-out", type=click.Path(dir_okay=False), default=None,
              help="Write the pools here instead of the run's pools.json (a larger rank beside the "
                   "run's own, which stays as it is).")
def rank(game, run, agent, games_per_pair, opening_plies, workers, seed, ray_address, allow_untrained,
         early, final, high, low, source, db_path, pools_out):
    """Round-robin tournament of the final networks; split them into high and low pools.

    With --high, --low and --source the split is given instead (an earlier rank whose networks are
    not all kept): no game is played and pools.json says where the split comes from."""
    # lazy: CLI start-up (each command loads only its own modules)
    from descent.tournament import given_pools, rank as do_rank
    info = load_game(game)
    run_dir = run_dir_of(info.spec, run)
    if high is not None or low is not None or source is not None:
        if db_path or pools_out:
            raise UserError("--db and --pools-out are for a rank; a given split plays no game and "
                            "writes the run's pools.json")
        if high is None or low is None or source is None:
            raise UserError("--high, --low and --source go together (a given split and where it comes from)")
        members = {name: [validate.parse_int(x, name, 0, validate.MAX_COUNT) for x in split_option(text, name)]
                   for name, text in (("--high", high), ("--low", low))}
        pools = given_pools(run_dir, info.spec, members["--high"], members["--low"], source, early=early,
                            final=final, echo=click.echo)
        print_pools(pools)
        click.echo(f"pools written to {layout.pools_file(run_dir)}")
        return
    from descent.config import config_ray  # lazy: CLI start-up (each command loads only its own modules)
    pools = do_rank(run_dir, info.spec, agent, games_per_pair, opening_plies, workers, seed,
                    ray_address=ray_address or config_ray(info.spec), echo=click.echo,
                    allow_untrained=allow_untrained, early=early, final=final, db_path=db_path,
                    pools_path=pools_out)
    print_pools(pools)
    click.echo(f"pools written to {pools_out or layout.pools_file(run_dir)}; results in "
               f"{db_path or layout.results_db(run_dir)}")


@cli.command()
@click.argument("game")
@click.option("--run", "run", type=click.Path(file_okay=False), default=None)
@click.option("--algorithms", default="minimax,minibal_n,minibal_plus", show_default=True,
              help="Comma-separated algorithm names under test.")
@click.option("--algorithm", "extra_algorithms", multiple=True, metavar="SPEC",
              help="An algorithm with options, e.g. minibal_plus:proven_wins=true (repeatable).")
@click.option("--times", default="0.01,0.1,0.5,1", show_default=True,
              help="Search times per move (s), comma separated.")
@click.option("--iterations", default=None, help="Iteration budgets instead of times (reproducible).")
@click.option("--opponent", default="pool", show_default=True, metavar="pool|mcts|ENGINE",
              help="The low pool, plain MCTS, or an outside engine with its own budget, e.g. "
                   "'uci:/usr/games/fairy-stockfish,Skill Level=0,nodes=1000' (docs/engines.md).")
@click.option("--opponent-time", default="1", show_default=True,
              help="The opponent's budget: seconds, or iterations=N.")
@games_per_pair_option(8, "Games per (high net, opponent) pairing: seat pairs sharing an opening.")
@opening_plies_option()
@workers_option()
@seed_option
@ray_option()
def evaluate(game, run, algorithms, extra_algorithms, times, iterations, opponent, opponent_time,
             games_per_pair, opening_plies, workers, seed, ray_address):
    """Balanced players (high nets) against the low pool or MCTS, at each search budget."""
    # lazy: CLI start-up (each command loads only its own modules)
    from descent.tournament import evaluate as do_evaluate
    info = load_game(game)
    run_dir = run_dir_of(info.spec, run)
    from descent.tournament import parse_budget  # lazy: CLI start-up (each command loads only its own modules)
    algs = split_option(algorithms, "--algorithms") + list(extra_algorithms)
    if iterations is not None:
        budgets = [f"iterations={validate.parse_int(x, '--iterations', 1, validate.MAX_COUNT)}"
                   for x in split_option(iterations, "--iterations")]
    else:
        budgets = [parse_budget(x) for x in split_option(times, "--times")]
    parse_budget(opponent_time)
    try:
        from descent.config import config_ray  # lazy: CLI start-up (each command loads only its own modules)
        n = do_evaluate(run_dir, info.spec, algs, budgets, opponent, opponent_time, games_per_pair,
                        workers, seed, ray_address=ray_address or config_ray(info.spec),
                        opening_plies=opening_plies)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    click.echo(f"{n} match(es) played; results in {layout.results_db(run_dir)}; `descent report --run {run_dir}`")


@cli.command()
@click.argument("game")
@click.option("--algorithm", default="minibal_plus", show_default=True, metavar="SPEC",
              help="The balanced player, without a budget (e.g. minibal_plus:eval=playout,playouts=4).")
@click.option("--against", default="pool", show_default=True, metavar="pool|AGENT",
              help="pool: high-pool nets against the low pool (pools.json of `descent rank`); or an agent spec.")
@click.option("--target", type=float, default=0.0, show_default=True,
              help="Target gain (or score) of the balanced player, in [-1, 1] (0: perfect balance).")
@click.option("--metric", type=click.Choice(["gain", "score"]), default="gain", show_default=True)
@click.option("--unit", type=click.Choice(["iterations", "time"]), default="iterations", show_default=True,
              help="Budget searched: iterations per move (reproducible) or seconds per move.")
@click.option("--range", "budget_range", default=None, metavar="LOW:HIGH",
              help="Budgets searched (default 1:10000 iterations, 0.001:10 seconds).")
@click.option("--opponent-budget", default="iterations=200", show_default=True,
              help="With --against pool: the low nets' Unbounded Minimax budget.")
@calibration_budget_options
@click.option("--run", "run", type=click.Path(file_okay=False), default=None,
              help="Run directory (default: checkpoints/<game>); results in <run>/calibrations/.")
@seed_option
@opening_plies_option(4, "Seeded random opening plies, the same for both seats of a pair, another for every "
                      "pair and budget (0: none; deterministic players then replay one game per seat).")
@click.option("--verbose", is_flag=True, help="Print every game.")
@ray_option("Run the games on Ray (as many at once as the cluster has CPUs): auto, an address, "
            "or local (a cluster started for the run).")
def calibrate(game, algorithm, against, target, metric, unit, budget_range, opponent_budget, max_games,
              near_games, precision, run, seed, opening_plies, verbose, ray_address):
    """Find the search budget at which a balanced player's gain (or score) against an opponent
    reaches a target, from a logistic curve in log-budget fitted to every game (resumable: rerun to
    continue)."""
    # lazy: CLI start-up (each command loads only its own modules)
    from descent.calibrate import Settings, Unreachable, calibrate as do_calibrate, describe
    info = load_game(game)
    if budget_range is None:
        budget_range = "1:10000" if unit == "iterations" else "0.001:10"
    parts = validate.text(budget_range, "--range", max_len=64).split(":")
    if len(parts) != 2:
        raise UserError(f"--range {budget_range!r}: expected LOW:HIGH, e.g. 1:10000")
    low, high = (validate.parse_real(x, f"--range {budget_range!r}", 0.0, None, lo_open=True) for x in parts)
    s = Settings(info.spec, algorithm=algorithm, against=against, target=target, metric=metric, unit=unit,
                 low=low, high=high, opponent_budget=opponent_budget, seed=seed, max_games=max_games,
                 near_games=near_games, precision=precision, opening_plies=opening_plies)
    run_dir = Path(run_dir_of(info.spec, run))
    click.echo(f"calibrating {algorithm} on {info.spec} against {against} to {metric} {target:+g} "
               f"({unit} {budget_range}); results in {layout.calibrations_dir(run_dir)}/")
    try:
        from descent.config import config_ray  # lazy: CLI start-up (each command loads only its own modules)
        result = do_calibrate(s, run_dir, echo=click.echo, progress=verbose,
                              ray_address=ray_address or config_ray(info.spec))
    except Unreachable as exc:
        raise UserError(str(exc)) from None
    click.echo(describe(result))
    click.echo(f"use it: descent play {info.spec} --level balanced; descent evaluate {info.spec} "
               f"--algorithm {algorithm.partition(':')[0]}:calibrated")


@cli.command()
@click.option("--run", "runs", multiple=True, type=click.Path(file_okay=False),
              help="Run directories (default: every run under checkpoints/).")
@click.option("--game", "games_", multiple=True, help="Only these games.")
@click.option("--out", "out", type=click.Path(file_okay=False), default=None,
              help="Report directory (default: <first run>/report).")
@click.option("--merge", "merge", multiple=True, type=click.Path(dir_okay=False),
              help="An earlier report's results.csv whose per-game cells join the databases' (games "
                   "evaluated elsewhere); the averages over games cover them all.")
def report(runs, games_, out, merge):
    """Tables (gain, W/D/L, score with 95% intervals over independent units), figures and CSV of the
    evaluations, one table and set of figures per experiment (low pool or MCTS, and its budget)."""
    from descent.report import ReportError, make_report  # lazy: CLI start-up (each command loads only its own modules)
    from training.run import DEFAULT_ROOT  # lazy: CLI start-up (each command loads only its own modules)
    dbs = [layout.results_db(r) for r in runs] if runs else layout.results_dbs_below(DEFAULT_ROOT)
    missing = [str(d) for d in dbs if not d.exists()]
    if missing:
        raise UserError(f"no results database: {', '.join(missing)} (run `descent evaluate` first)")
    if not dbs and not merge:
        raise UserError(f"no results database under {DEFAULT_ROOT}")
    specs = [load_game(g).spec for g in games_] or None
    if not out and not runs and merge:
        raise UserError("--merge needs --out (or --run): where should the report go?")
    out_dir = out or layout.report_dir(runs[0] if runs else DEFAULT_ROOT)
    try:
        rep = make_report(dbs, out_dir, specs, merge=merge)
    except ReportError as exc:
        raise UserError(str(exc)) from None
    if not rep["records"]:
        raise UserError("no evaluation results to report (run `descent evaluate` first)")
    click.echo(rep["table"])
    click.echo(f"report: {rep['out']}/table.txt, results.csv and {len(rep['figures'])} figure(s)")


@cli.command("rate-levels")
@click.argument("game")
@click.option("--phase", "phases", default="rate,h2h", show_default=True,
              help="What to play: rate (the settings against the rungs), h2h (the levels head to head), "
                   "reference (the levels against --reference), comma separated.")
@click.option("--games", "n_games", type=COUNT, default=80, show_default=True,
              help="Games per setting against the rungs (batches of 10).")
@click.option("--rung-games", type=COUNT, default=40, show_default=True,
              help="Games between neighbouring rungs.")
@click.option("--rungs", default=",".join(map(str, (1, 3, 10, 30, 100, 300, 1000))), show_default=True,
              help="The ladder: this project's MCTS at these iteration counts.")
@click.option("--anchor", type=COUNT, default=100, show_default=True, help="The rung at Elo 0.")
@click.option("--max-rung", type=COUNT, default=100_000, show_default=True,
              help="The most iterations of a rung a setting plays.")
@click.option("--h2h-games", type=COUNT, default=40, show_default=True, help="Games per head-to-head pair.")
@click.option("--reference", "references", multiple=True, metavar="AGENT",
              help="An outside reference for the reference phase (repeatable), e.g. "
                   "'uci:/usr/games/fairy-stockfish,Skill Level=3,nodes=1000' (docs/engines.md).")
@click.option("--reference-games", type=COUNT, default=20, show_default=True,
              help="Games of each level against each reference.")
@click.option("--bootstrap", "boot", type=IntRange(0, 100_000), default=300, show_default=True,
              help="Bootstrap resamples behind the 95% intervals.")
@click.option("--db", "db_path", type=click.Path(dir_okay=False), default=None,
              help="The results database of the rating games (default: results/levels/<game>.db).")
@shipped_option
@workers_option(1, "Worker processes.")
@seed_option
def rate_levels(game, phases, n_games, rung_games, rungs, anchor, max_rung, h2h_games, references,
                reference_games, boot, db_path, base, workers, seed):
    """Rate GAME's levels and write its rating table (strength.json beside the shipped network),
    which `descent play --elo`, `descent levels`, UCI_Elo and the page read (docs/strength.md).

    Resumable: the games are stored as they end, and a rerun plays only those missing.
    """
    from descent.levels import rate_levels as run  # lazy: CLI start-up (each command loads only its own modules)
    from descent.strength import rating_text  # lazy: CLI start-up (each command loads only its own modules)
    info = load_game(game)
    sims = [validate.parse_int(x, "--rungs", 1, 10 ** 7, UserError) for x in split_option(rungs, "--rungs")]
    out = run(info.spec, db_path, base, split_option(phases, "--phase"), n_games, rung_games, sims, anchor,
              max_rung, h2h_games, list(references), reference_games, boot, seed, workers, echo=click.echo)
    t = out["table"]
    click.echo(f"{info.spec}: {out['played']} game(s) played; table written to {out['path']} "
               f"(games in {out['db']}); `descent levels {info.spec}` shows it")
    for lvl in ("easy", "medium", "hard", "strongest", "balanced"):
        if lvl in t["levels"]:
            click.echo(f"  {lvl:<9}  {rating_text(t['levels'][lvl], t['anchor'])}")
