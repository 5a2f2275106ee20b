"""Training: ``train``, ``pipeline`` (train, rank, evaluate, report on one game) and ``experiment``
(an experiment file). All three build their training with ``descent.plan.build_plan``: the same
config loading, budget and milestone rule, population, workers and Ray shipping.
"""
from __future__ import annotations

from pathlib import Path

import click

from games import validate
from training import layout
from descent.cli.options import (IntRange, UserError, cli, games_per_pair_option,
                                 max_games_option, min_games_option, ray_option, ray_ship_options, runtime_options,
                                 seed_option, split_option, workers_option)
from descent.cli.protocol import print_pools

# The main job's floor of self-play games per network: a quiet 2-core machine plays more in the 2
# minutes (so there the time decides), a machine ten times slower or loaded far past its cores
# trains on to this many games instead of ranking networks that never learned (docs/training.md,
# "Budgets on a slow machine").
PIPELINE_MIN_GAMES = 16


@cli.command()
@click.argument("game")
@click.option("--config", "config_path", type=click.Path(dir_okay=False), default=None,
              help="Config file (default: configs/<game>.toml).")
@click.option("--population", type=IntRange(1, 10_000), default=None, help="Networks to train.")
@click.option("--budget", default=None, help="Training time of each network, e.g. 70d, 2h, 10m.")
@click.option("--milestones", default=None, help="Named checkpoints, e.g. 20d,70d.")
@min_games_option(None)
@workers_option(None, "Members trained in parallel (at most one per member).", show_default=None)
@click.option("--out", "out", type=click.Path(file_okay=False), default=None,
              help="Run directory (default: checkpoints/<game>).")
@seed_option
@max_games_option
@ray_option()
@ray_ship_options
@runtime_options()
def train(game, config_path, population, budget, milestones, min_games, workers, out, seed, max_games,
          ray_address, ray_ship, ray_ship_replay, **runtime):
    """Train a population of value networks by Descent self-play (resumable: rerun to continue).

    The options that override the config's [run] runtime keys change how fast self-play runs, not
    what a network learns: a rerun may change them (docs/options.md)."""
    from descent.plan import build_plan  # lazy: CLI start-up (each command loads only its own modules)
    plan = build_plan(game, config=config_path, population=population, budget=budget,
                      milestones=milestones, workers=workers, seed=seed, out=out, max_games=max_games,
                      ray=ray_address, ray_ship=ray_ship, ray_ship_replay=ray_ship_replay, runtime=runtime,
                      min_games=min_games)
    for note in plan.notes:
        click.echo(note, err=True)
    plan.run_dir.mkdir(parents=True, exist_ok=True)     # an unusable --out fails here, before any work
    actors, why = plan.actors
    click.echo(f"training {plan.population} network(s) of {plan.game} for {plan.budget:.0f} s each "
               + (f"and at least {plan.min_games} game(s) " if plan.min_games else "")
               + f"(milestones {', '.join(plan.milestone_names)}) in {plan.run_dir}; config {plan.config_path}"
               + (f"; {why}" if why else f"; {actors} self-play actors each" if actors > 1 else ""))
    results = plan.run()
    plan.record_milestones()
    for i, r in enumerate(results):
        click.echo(f"member {i}: {r['games']} games, {r['examples']} examples, "
                   f"{r['train_seconds']:.0f} s trained, milestones: {', '.join(r['milestones_done']) or 'none'}")
    click.echo(f"checkpoints: `descent checkpoints --out {plan.run_dir}`")


@cli.command()
@click.argument("game", default="reversi(size=6)")
@click.option("--population", type=IntRange(2, 10_000), default=4, show_default=True)
@click.option("--budget", default="2m", show_default=True, help="Training time of each network.")
@click.option("--milestones", default="30s,2m", show_default=True, help="Early and final checkpoints.")
@min_games_option(PIPELINE_MIN_GAMES)
@workers_option(2)
@click.option("--rank-agent", default="minimax:time=0.1,decision=safe", show_default=True)
@click.option("--algorithms", default="minimax,minibal_n,minibal_plus", show_default=True)
@click.option("--times", default="0.02,0.05,0.2", show_default=True)
@click.option("--iterations", default=None, help="Iteration budgets instead of times.")
@click.option("--opponent-time", default="0.05", show_default=True)
@games_per_pair_option(8, "Games per pair in rank and evaluate (seat pairs sharing an opening).")
@click.option("--opening-plies", type=IntRange(0, 1000), default=2, show_default=True)
@click.option("--out", "out", type=click.Path(file_okay=False), default=None)
@seed_option
@max_games_option
@ray_option()
@ray_ship_options
@runtime_options()
def pipeline(game, population, budget, milestones, min_games, workers, rank_agent, algorithms, times, iterations,
             opponent_time, games_per_pair, opening_plies, out, seed, max_games, ray_address, ray_ship,
             ray_ship_replay, **runtime):
    """The whole protocol on one game, small: train a population, rank it, evaluate the balancing
    algorithms, report. Every stage resumes where it stopped when the command is rerun."""
    from descent.plan import build_plan  # lazy: CLI start-up (each command loads only its own modules)
    from descent.report import make_report  # lazy: CLI start-up (each command loads only its own modules)
    # lazy: CLI start-up (each command loads only its own modules)
    from descent.tournament import evaluate as do_evaluate, parse_budget, rank as do_rank
    from search_ext.agents import parse_agent  # lazy: CLI start-up (each command loads only its own modules)
    plan = build_plan(game, population=population, budget=budget, milestones=milestones, workers=workers,
                      seed=seed, out=out, max_games=max_games, ray=ray_address, ray_ship=ray_ship,
                      ray_ship_replay=ray_ship_replay, runtime=runtime, ranked=True, min_games=min_games)
    parse_agent(rank_agent)
    algs = split_option(algorithms, "--algorithms")
    budgets = ([f"iterations={validate.parse_int(x, '--iterations', 1, validate.MAX_COUNT)}"
                for x in split_option(iterations, "--iterations")] if iterations is not None
               else [parse_budget(x) for x in split_option(times, "--times")])
    for alg in algs:
        parse_agent(alg + ":" + budgets[0] if ":" not in alg else alg + "," + budgets[0])
    parse_budget(opponent_time)
    for note in plan.notes:
        click.echo(note, err=True)
    spec, run_dir, workers = plan.game, plan.run_dir, plan.workers
    click.echo(f"[1/4] training {plan.population} networks of {spec} for {plan.budget_text} each"
               + (f" and at least {plan.min_games} self-play games each" if plan.min_games else "")
               + f" in {run_dir}")
    plan.run()
    plan.record_milestones()
    click.echo(f"[2/4] ranking them ({rank_agent})")
    pools = do_rank(run_dir, spec, rank_agent, games_per_pair, opening_plies, workers, seed,
                    ray_address=plan.ray, echo=click.echo)
    print_pools(pools)
    click.echo(f"[3/4] evaluating {', '.join(algs)} at {', '.join(budgets)} against the low pool")
    do_evaluate(run_dir, spec, algs, budgets, "pool", opponent_time, games_per_pair, workers, seed,
                ray_address=plan.ray, opening_plies=opening_plies)
    click.echo("[4/4] report")
    rep = make_report([layout.results_db(run_dir)], layout.report_dir(run_dir), [spec])
    click.echo(rep["table"])
    click.echo(f"report written to {rep['out']} ({layout.REPORT_TABLE}, {layout.REPORT_CSV}, figures "
               f"{', '.join(Path(f).name for f in rep['figures'])})")


@cli.command()
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--runs", default=None, type=click.Path(file_okay=False),
              help="Folder of the run directories (default: the file's experiment.runs).")
@click.option("--report", "report_dir", default=None, type=click.Path(file_okay=False),
              help="Report folder (default: the file's experiment.report).")
@click.option("--stage", "stages", multiple=True, type=click.Choice(["train", "rank", "evaluate", "report"]),
              help="Run only these stages (repeatable; default: all, in order).")
@click.option("--game", "only_games", multiple=True, metavar="SPEC",
              help="Only this game of the file (repeatable; sessions may share the stages of a run).")
@ray_option()
@ray_ship_options
def experiment(file, runs, report_dir, stages, only_games, ray_address, ray_ship, ray_ship_replay):
    """Run an experiment file (configs/experiments/*.toml): train, rank, evaluate against the low
    pool and MCTS, report. Every stage resumes where it stopped when the command is rerun."""
    from descent.experiment import run_experiment  # lazy: CLI start-up (each command loads only its own modules)
    try:
        run_experiment(file, runs, report_dir, stages or ("train", "rank", "evaluate", "report"),
                       echo=click.echo, ray_address=ray_address, only_games=list(only_games) or None,
                       ray_ship=ray_ship, ray_ship_replay=ray_ship_replay,
                       warn=lambda line: click.echo(line, err=True))
    except ValueError as exc:
        raise UserError(str(exc)) from None
