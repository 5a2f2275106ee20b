"""The tool commands: ``games``, ``check-game``, ``perft``, ``show``, ``random-match``, ``tour``,
``algorithms``, and the checkpoints of runs: ``checkpoints``, ``ship``.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

import click
import numpy as np

from games import validate
from games.errors import GameError, PluginError
from descent.cli.options import (COUNT, IntRange, UserError, calibration_budget_options, cli, load_game,
                                  seed_option)


def _state(spec: str, position: str | None, moves: str | None = None):
    info = load_game(spec)
    state = info.new_state()
    if position is not None:           # '' is an error, not the start position
        state.set_position(position)
    if moves:
        for text in moves.replace(",", " ").split():
            state.push(text)
    return info, state


@cli.command("games")
@click.option("--json", "as_json", is_flag=True, help="Print the facts as JSON.")
@click.option("--openspiel", "list_openspiel", is_flag=True,
              help="List the OpenSpiel games descent plays (openspiel:NAME), one a line.")
@click.argument("names", nargs=-1)
def games_cmd(names, as_json, list_openspiel):
    """List the games, their parameters and facts (optionally only NAMES, which may be specs)."""
    import games  # lazy: CLI start-up (each command loads only its own modules)
    from games import openspiel  # lazy: CLI start-up (each command loads only its own modules)
    if list_openspiel:
        found = openspiel.available()
        if not found:
            raise click.ClickException(f"OpenSpiel is not installed: {openspiel.INSTALL}")
        click.echo("\n".join(found))
        return
    # lazy: CLI start-up (each command loads only its own modules)
    from games.registry import FT_KINDS, FT_PARAM, SCORE_KINDS, own_score_kind
    from games.plugins import installed  # lazy: CLI start-up (each command loads only its own modules)
    specs = list(names or games.names())
    records = []
    for spec in specs:
        info = games.load(spec)
        records.append((info, info.facts()))
    broken = []              # installed plugin games that cannot be used: listed, never fatal
    for name, target, err in (installed() if not names else []):
        if name in specs:
            err = PluginError("its name is a built-in game's (rename the entry point)")
        if err is None:
            try:
                info = games.load(name)
                records.append((info, info.facts()))
            except GameError as exc:
                err = exc
        if err is not None:
            label = f"plugin {name} ({target}): "
            why = str(err)[len(label):] if str(err).startswith(label) else str(err)
            broken.append((name, target, why))
    if as_json:
        click.echo(json.dumps([f for _, f in records]
                              + [{"plugin": name, "target": target, "error": why} for name, target, why in broken],
                              indent=2))
        return
    for info, _f in records:
        d = info.definition
        plugin = (f"; written in Python: {info.extra['plugin']}" if "plugin" in info.extra
                  else f"; OpenSpiel's {info.extra['openspiel']}" if "openspiel" in info.extra else "")
        click.echo(f"{info.spec}  (version {d.version}{plugin})")
        click.echo(f"  {d.summary}")
        for p in d.params:
            click.echo(f"  param  {p.describe()}")
        if info.score_kind in FT_KINDS.values():
            click.echo(f"  param  {FT_PARAM}: the terminal evaluation, "
                       f"{' or '.join(FT_KINDS)} depth (default: {SCORE_KINDS[own_score_kind(info)]})")
        h, w, c = info.planes_shape
        click.echo(f"  players {info.players[0]} (first), {info.players[1]}; actions {info.num_actions}; "
                   f"ply cap {info.max_plies}; planes {h}x{w}x{c}; symmetries {len(info.symmetries)}; "
                   f"terminal evaluation: {SCORE_KINDS[info.score_kind]}")
    for name, target, why in broken:
        click.echo(f"plugin {name} ({target}) is broken: {why}")
    n_spiel = len(openspiel.available()) if not names else 0
    if n_spiel:
        click.echo(f"openspiel:NAME  {n_spiel} games from OpenSpiel, e.g. openspiel:connect_four "
                   f"(`descent games --openspiel` lists them)")


@cli.command("check-game")
@click.argument("game")
@click.option("--games", "n_games", type=IntRange(1, 100_000), default=20, show_default=True,
              help="Random games to play.")
@seed_option
@click.option("--depth", type=IntRange(1, 8), default=3, show_default=True, help="Perft depth.")
def check_game(game, n_games, seed, depth):
    """Run the conformance suite on a game (a game written in Python: module:Class): random games
    checked against undo and copies, hashes, terminal states, planes, symmetries, text round trips
    and perft. Exit status 1 when a check fails, each failure with the moves that show it."""
    # lazy: CLI start-up (each command loads only its own modules)
    from games.conformance import CHECKS, check_game as run_checks
    report = run_checks(game, n_games=n_games, seed=seed, depth=depth)
    click.echo(f"check-game {report.spec}: {n_games} random games (seed {seed}), perft to depth {depth}")
    failed = {f.check: f for f in report.failures}
    done = dict(report.results)
    for name, _ in CHECKS:
        if name in failed:
            click.echo(f"  FAIL  {failed[name]}")
        else:
            click.echo(f"  ok    {name}: {done[name]}")
    n = len(report.failures)
    click.echo(f"{len(CHECKS) - n} of {len(CHECKS)} checks passed" + (f", {n} failed" if n else ""))
    if n:
        raise SystemExit(1)


@cli.command()
@click.argument("game")
@click.argument("depth", type=IntRange(0, 64))
@click.option("--position", default=None, help="Start from this position (the game's text format).")
@click.option("--moves", default=None, help="Moves to play first, space separated, in the game's notation.")
@click.option("--divide", is_flag=True, help="Print the count below each legal move.")
def perft(game, depth, position, moves, divide):
    """Count the legal move sequences of length DEPTH from a position (compiled, no Python per node)."""
    from games._state import perft as c_perft  # lazy: CLI start-up (each command loads only its own modules)
    _, state = _state(game, position, moves)
    t0 = time.perf_counter()
    if divide and depth >= 1:
        total = 0
        for a in state.legal_actions_list():
            child = state.copy()
            child.push(a)
            n = c_perft(child, depth - 1)
            total += n
            click.echo(f"{state.move_to_str(a)}: {n}")
    else:
        total = c_perft(state, depth)
    dt = time.perf_counter() - t0
    rate = total / dt if dt > 0 else float("inf")
    click.echo(f"perft({depth}) = {total}   [{dt:.3f} s, {rate:,.0f} nodes/s]")


@cli.command()
@click.argument("game")
@click.option("--position", default=None, help="The position (the game's text format).")
@click.option("--moves", default=None, help="Moves to play first, space separated, in the game's notation.")
def show(game, position, moves):
    """Draw a position with its text, legal moves and outcome."""
    info, state = _state(game, position, moves)
    click.echo(str(state))
    click.echo(f"position: {state.position()}")
    click.echo(f"ply {state.ply}, hash {state.zobrist_hash:016x}")
    if state.is_game_over():
        o = state.outcome()
        who = "draw" if o.winner is None else f"{o.winner_name} wins"
        click.echo(f"game over: {o.result()} ({who}, {o.termination}); score f_t = {o.score:+.4f}")
    else:
        legal = state.legal_actions_list()
        click.echo(f"{info.players[state.to_move]} to move; {len(legal)} legal: "
                   + " ".join(state.move_to_str(a) for a in legal))


def _random_match(spec: str, n_games: int, seed: int, progress: bool = True) -> dict:
    from tqdm import tqdm  # lazy: CLI start-up (each command loads only its own modules)
    from games._state import random_games  # lazy: CLI start-up (each command loads only its own modules)
    info = load_game(spec)
    state = info.new_state()
    chunk = max(1, min(10_000, n_games // 20 or 1))
    results, lengths = [], []
    t0 = time.perf_counter()
    with tqdm(total=n_games, desc=f"random games {info.spec}", unit="game", disable=not progress,
              leave=False) as bar:
        done, k = 0, 0
        while done < n_games:
            m = min(chunk, n_games - done)
            r, lens = random_games(state, m, (seed * 1_000_003 + k) & 0xFFFFFFFFFFFFFFFF)
            results.append(r)
            lengths.append(lens)
            done += m
            k += 1
            bar.update(m)
    dt = time.perf_counter() - t0
    r = np.concatenate(results) if results else np.zeros(0, np.int8)
    plies = np.concatenate(lengths) if lengths else np.zeros(0, np.int32)
    return {"game": info.spec, "games": n_games, "first_wins": int((r == 1).sum()),
            "draws": int((r == 0).sum()), "second_wins": int((r == -1).sum()),
            "mean_plies": float(plies.mean()) if n_games else 0.0, "seconds": dt,
            "games_per_s": n_games / dt if dt > 0 else float("inf"),
            "plies_per_s": float(plies.sum()) / dt if dt > 0 else float("inf")}


@cli.command("random-match")
@click.argument("game")
@click.option("--games", "n_games", type=COUNT, default=1000, show_default=True,
              help="Number of random games.")
@seed_option
def random_match(game, n_games, seed):
    """Play uniformly random games; print the results and the speed."""
    s = _random_match(game, n_games, seed)
    n = s["games"]
    _ = load_game(game)
    p0, p1 = _.players
    click.echo(f"{s['game']}: {n} random games (seed {seed})")
    click.echo(f"  {p0} (first) wins {s['first_wins']} ({100 * s['first_wins'] / n:.1f}%), "
               f"draws {s['draws']} ({100 * s['draws'] / n:.1f}%), "
               f"{p1} wins {s['second_wins']} ({100 * s['second_wins'] / n:.1f}%)")
    click.echo(f"  mean length {s['mean_plies']:.1f} plies; {s['games_per_s']:,.0f} games/s, "
               f"{s['plies_per_s']:,.0f} plies/s ({s['seconds']:.2f} s)")


@cli.command()
@seed_option
@click.option("--config", "config_paths", multiple=True, type=click.Path(dir_okay=False),
              help="Config file(s) to tour (default: every file in configs/).")
def tour(seed, config_paths):
    """The quick-start job: perft and random games on every configured game, with speeds.

    Reads the [game] and [tour] sections of configs/*.toml. (Later stages extend this into the
    whole train, rank and evaluate pipeline.)
    """
    from games._state import perft as c_perft  # lazy: CLI start-up (each command loads only its own modules)
    from descent.config import all_configs, load_config  # lazy: CLI start-up (each command loads only its own modules)
    configs = [(p, load_config(p)) for p in config_paths] if config_paths else all_configs()
    click.echo(f"{'game':<30} {'perft':>16} {'nodes/s':>14} {'random games/s':>15} "
               f"{'first/draw/second %':>22}")
    for _path, cfg in configs:
        spec, depth, n = cfg["game"]["spec"], cfg["tour"]["perft_depth"], cfg["tour"]["random_games"]
        info = load_game(spec)
        state = info.new_state()
        t0 = time.perf_counter()
        nodes = c_perft(state, depth)
        dt = time.perf_counter() - t0
        s = _random_match(spec, n, seed, progress=False)
        pct = "/".join(f"{100 * s[k] / n:.0f}" for k in ("first_wins", "draws", "second_wins"))
        click.echo(f"{info.spec:<30} {f'd{depth}={nodes}':>16} {nodes / max(dt, 1e-9):>14,.0f} "
                   f"{s['games_per_s']:>15,.0f} {pct:>22}")
    click.echo(f"Toured {len(configs)} games. `descent games` lists them all; `descent show GAME` "
               f"draws one.")


@cli.command()
def algorithms():
    """List the search algorithms an agent can use, with their keys and defaults."""
    from search_ext.agents import describe_algorithms  # lazy: CLI start-up (each command loads only its own modules)
    click.echo(describe_algorithms())


@cli.command()
@click.argument("game", required=False)
@click.option("--out", "root", type=click.Path(file_okay=False), default=None,
              help="A run directory or a folder of runs (default: checkpoints/).")
def checkpoints(game, root):
    """List the milestone checkpoints of the training runs, and (without --out) the networks
    shipped in the repository (marked SHIPPED)."""
    # lazy: CLI start-up (each command loads only its own modules)
    from training.run import DEFAULT_ROOT, list_checkpoints
    spec = load_game(game).spec if game else None
    if root is not None and not Path(root).is_dir():
        raise UserError(f"--out {root}: no such directory")
    rows = list_checkpoints(root or DEFAULT_ROOT, spec)
    if root is None:
        from descent.shipped import listing  # lazy: CLI start-up (each command loads only its own modules)
        rows += listing(spec)
    if not rows:
        click.echo("no checkpoints found" + (f" for {spec}" if spec else "") + f" under {root or DEFAULT_ROOT}")
        return

    def shown(x, fmt=""):
        return "?" if x is None else format(x, fmt)
    click.echo(f"{'game':<28} {'member':>6} {'milestone':>10} {'games':>7} {'examples':>9} "
               f"{'trained s':>10}  path")
    flagged = 0
    for r in rows:
        flag = ""
        if r.get("shipped"):
            flag = f"  SHIPPED ({r['shipped']}{', UNDERTRAINED' if r['undertrained'] else ''})"
        elif r["games"] == 0:
            flag = "  UNTRAINED (0 games)"
        elif r["undertrained"]:
            flag = "  UNDERTRAINED"
        flagged += bool(flag) and not r.get("shipped")
        click.echo(f"{r['game']:<28} {r['member']:>6} {r['milestone']:>10} {shown(r['games']):>7} "
                   f"{shown(r['examples']):>9} {shown(r['train_seconds'], '.0f'):>10}  "
                   f"{r['path']}{'' if r['exists'] else ' (missing)'}{flag}")
    if flagged:
        click.echo(f"{flagged} checkpoint(s) written after fewer self-play games than "
                   f"min_milestone_games ([run] key): rank leaves out members whose final one saw "
                   f"none and warns about the others")


@cli.command()
@click.argument("game")
@click.option("--run", "run", type=click.Path(file_okay=False), default=None,
              help="The training run whose milestones are shipped.")
@click.option("--early", default=None, metavar="MILESTONE", help="The early milestone (e.g. 20d).")
@click.option("--final", default=None, metavar="MILESTONE", help="The final milestone (e.g. 70d).")
@click.option("--member", type=IntRange(0, 100_000), default=0, show_default=True,
              help="The member of the run whose milestones are shipped.")
@click.option("--command", "command", default=None, metavar="TEXT",
              help="The command that trained the run, for the model card (default: rebuilt from run.json).")
@click.option("--cores", type=IntRange(1, 100_000), default=1, show_default=True,
              help="Cores the member trained on (CPU-hours = training seconds x cores).")
@click.option("--calibrate", "do_calibrate", is_flag=True,
              help="Calibrate the balanced player on the shipped networks and ship the result.")
@click.option("--opponent-budget", default="iterations=200", show_default=True,
              help="With --calibrate: the early network's Unbounded Minimax budget.")
@click.option("--range", "budget_range", default="1:2000", show_default=True, metavar="LOW:HIGH",
              help="With --calibrate: the iterations searched.")
@calibration_budget_options
@seed_option
def ship(game, run, early, final, member, command, cores, do_calibrate, opponent_budget, budget_range,
         max_games, near_games, precision, seed):
    """Ship an early and a final network of a run in checkpoints/shipped/ with a model card
    (--run, --early, --final), and/or calibrate the balanced player on them (--calibrate)."""
    # lazy: CLI start-up (each command loads only its own modules)
    from descent.ship import calibrate_shipped, ship as do_ship
    from descent.calibrate import Unreachable, describe  # lazy: CLI start-up (each command loads only its own modules)
    info = load_game(game)
    given = [o for o, x in (("--run", run), ("--early", early), ("--final", final)) if x is not None]
    if given and len(given) < 3:
        raise UserError(f"{', '.join(given)} given without "
                        f"{', '.join(o for o in ('--run', '--early', '--final') if o not in given)}: "
                        f"shipping needs all three")
    if not given and not do_calibrate:
        raise UserError("nothing to do: give --run RUN --early MILESTONE --final MILESTONE, and/or --calibrate")
    if given:
        do_ship(run, early, final, member=member, command=command, cores=cores, game=info.spec, echo=click.echo)
    if do_calibrate:
        parts = validate.text(budget_range, "--range", max_len=64).split(":")
        if len(parts) != 2:
            raise UserError(f"--range {budget_range!r}: expected LOW:HIGH, e.g. 1:2000")
        low, high = (validate.parse_int(x, f"--range {budget_range!r}", 1, validate.MAX_COUNT) for x in parts)
        click.echo(f"calibrating minibal_plus with the shipped final network of {info.spec} against minimax "
                   f"({opponent_budget}) with the shipped early one, iterations {low}:{high}")
        try:
            result = calibrate_shipped(info.spec, opponent_budget=opponent_budget, low=low, high=high,
                                       max_games=max_games, near_games=near_games, precision=precision, seed=seed,
                                       echo=click.echo)
        except Unreachable as exc:
            raise UserError(f"{exc} (no calibration shipped)") from None
        click.echo(describe(result))
        click.echo(f"shipped: {result['path']}")
