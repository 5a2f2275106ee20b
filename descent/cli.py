"""The ``descent`` command line.

Every command that takes a game takes a spec: ``NAME`` or ``NAME(key=value,...)``, for example
``reversi(size=6)``. Errors in the input (unknown game, bad parameter, malformed position or move)
print one line and exit with status 2; nothing is written.
"""
from __future__ import annotations

import json
import sys
import time

import click

from games import validate
from games.errors import GameError


class DescentGroup(click.Group):
    """A click group that turns the project's input errors into one-line CLI errors."""

    def parse_args(self, ctx, args):
        for arg in args:            # (a shell cannot pass one; an API caller can)
            if isinstance(arg, str) and "\x00" in arg:
                raise UserError(f"argument {arg!r} contains a NUL character")
        return super().parse_args(ctx, args)

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except GameError as exc:
            raise UserError(str(exc)) from None
        except OSError as exc:       # a path given by the user that cannot be read or written
            where = f"{exc.filename}: " if exc.filename else ""
            raise UserError(f"{where}{exc.strerror or exc}") from None


class UserError(click.ClickException):
    """Bad input from the user: one line on stderr (line breaks squashed), exit status 2."""

    exit_code = 2

    def __init__(self, message: str):
        super().__init__(validate.one_line(message))


class Seconds(click.ParamType):
    """A time in seconds: an ASCII number, finite, > 0, at most a week (no nan, inf or 0)."""

    name = "SECONDS"

    def convert(self, value, param, ctx):
        what = param.opts[0] if param is not None and param.opts else "seconds"
        try:
            if isinstance(value, (int, float)):
                return validate.seconds(value, what)
            return validate.parse_real(value, what, 0.0, validate.MAX_SECONDS, lo_open=True)
        except GameError as exc:
            self.fail(str(exc), param, ctx)


class IntRange(click.IntRange):
    """``click.IntRange`` reading ASCII decimal only (click's own reads other Unicode digits, such
    as the fullwidth '１', and '1_000')."""

    def convert(self, value, param, ctx):
        if isinstance(value, str) and validate._INT.fullmatch(value.strip()) is None:
            self.fail(f"{value!r} is not an integer (ASCII digits)", param, ctx)
        return super().convert(value, param, ctx)


class Real(click.ParamType):
    """A finite ASCII number in [lo, hi] (``validate.parse_real``: no nan, inf, '1_0')."""

    name = "NUMBER"

    def __init__(self, lo=None, hi=None):
        self.lo, self.hi = lo, hi

    def convert(self, value, param, ctx):
        what = param.opts[0] if param is not None and param.opts else "number"
        try:
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                return validate.real(value, what, self.lo, self.hi)
            return validate.parse_real(value, what, self.lo, self.hi)
        except GameError as exc:
            self.fail(str(exc), param, ctx)


def click_options(options_class, section: str = "run"):
    """A decorator adding one click option per field of an options dataclass
    (``training.options``) whose ``cli`` is true: ``--name-with-dashes``, typed, ranged and helped
    from the field. Each is None unless given; ``apply_options`` sets the given ones over the
    config's ``[section]`` keys."""
    from training.options import option_fields

    def decorate(f):
        for opt in reversed([o for o in option_fields(options_class) if o.info.cli]):
            info = opt.info
            if info.choices is not None:
                kind = click.Choice([str(c) for c in info.choices])
            elif opt.type is int:
                kind = IntRange(info.min, info.max)
            elif opt.type is float:
                kind = Real(info.min, info.max)
            elif opt.type is bool:
                kind = click.BOOL
            else:
                kind = click.STRING
            f = click.option(opt.cli_name, opt.name, type=kind, default=None,
                             help=f"{info.help[:1].upper()}{info.help[1:]}. Default: the config's "
                                  f"[{section}] {opt.name} ({opt.default!r} if unset).")(f)
        return f
    return decorate


def apply_options(cfg: dict, given: dict, section: str = "run") -> None:
    """Set the options given on the command line (not None) over the config's ``[section]``."""
    cfg[section].update({k: v for k, v in given.items() if v is not None})


def _runtime_options():
    from training.options import RuntimeOptions
    return click_options(RuntimeOptions)


SEED = IntRange(0, 2 ** 31 - 1)
COUNT = IntRange(1, validate.MAX_COUNT)
WORKERS = IntRange(1, 1024)


def _list(text: str, option: str) -> list[str]:
    """A comma-separated option value: no empty list, no empty item."""
    return validate.split_list(text, option, GameError)


def _load(spec: str):
    import games
    return games.load(spec)


def _state(spec: str, position: str | None, moves: str | None = None):
    info = _load(spec)
    state = info.new_state()
    if position is not None:           # '' is an error, not the start position
        state.set_position(position)
    if moves:
        for text in moves.replace(",", " ").split():
            state.push(text)
    return info, state


@click.group(cls=DescentGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="descent")
def cli():
    """descent: self-play Descent training and balanced play for two-player board games."""


@cli.command("games")
@click.option("--json", "as_json", is_flag=True, help="Print the facts as JSON.")
@click.argument("names", nargs=-1)
def games_cmd(names, as_json):
    """List the games, their parameters and facts (optionally only NAMES, which may be specs)."""
    import games
    from games.registry import SCORE_KINDS
    specs = names or games.names()
    records = []
    for spec in specs:
        info = games.load(spec)
        records.append((info, info.facts()))
    if as_json:
        click.echo(json.dumps([f for _, f in records], indent=2))
        return
    for info, f in records:
        d = info.definition
        click.echo(f"{info.spec}  (version {d.version})")
        click.echo(f"  {d.summary}")
        for p in d.params:
            click.echo(f"  param  {p.describe()}")
        h, w, c = info.planes_shape
        click.echo(f"  players {info.players[0]} (first), {info.players[1]}; actions {info.num_actions}; "
                   f"ply cap {info.max_plies}; planes {h}x{w}x{c}; symmetries {len(info.symmetries)}; "
                   f"terminal evaluation: {SCORE_KINDS[info.score_kind]}")


@cli.command()
@click.argument("game")
@click.argument("depth", type=IntRange(0, 64))
@click.option("--position", default=None, help="Start from this position (the game's text format).")
@click.option("--moves", default=None, help="Moves to play first, space separated, in the game's notation.")
@click.option("--divide", is_flag=True, help="Print the count below each legal move.")
def perft(game, depth, position, moves, divide):
    """Count the legal move sequences of length DEPTH from a position (compiled, no Python per node)."""
    from games._state import perft as c_perft
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
    from tqdm import tqdm
    import numpy as np
    from games._state import random_games
    info = _load(spec)
    state = info.new_state()
    chunk = max(1, min(10_000, n_games // 20 or 1))
    results, lengths = [], []
    t0 = time.perf_counter()
    with tqdm(total=n_games, desc=f"random games {info.spec}", unit="game", disable=not progress,
              leave=False) as bar:
        done, k = 0, 0
        while done < n_games:
            m = min(chunk, n_games - done)
            r, l = random_games(state, m, (seed * 1_000_003 + k) & 0xFFFFFFFFFFFFFFFF)
            results.append(r)
            lengths.append(l)
            done += m
            k += 1
            bar.update(m)
    dt = time.perf_counter() - t0
    r = np.concatenate(results) if results else np.zeros(0, np.int8)
    l = np.concatenate(lengths) if lengths else np.zeros(0, np.int32)
    return {"game": info.spec, "games": n_games, "first_wins": int((r == 1).sum()),
            "draws": int((r == 0).sum()), "second_wins": int((r == -1).sum()),
            "mean_plies": float(l.mean()) if n_games else 0.0, "seconds": dt,
            "games_per_s": n_games / dt if dt > 0 else float("inf"),
            "plies_per_s": float(l.sum()) / dt if dt > 0 else float("inf")}


@cli.command("random-match")
@click.argument("game")
@click.option("--games", "n_games", type=COUNT, default=1000, show_default=True,
              help="Number of random games.")
@click.option("--seed", type=SEED, default=0, show_default=True)
def random_match(game, n_games, seed):
    """Play uniformly random games; print the results and the speed."""
    s = _random_match(game, n_games, seed)
    n = s["games"]
    _ = _load(game)
    p0, p1 = _.players
    click.echo(f"{s['game']}: {n} random games (seed {seed})")
    click.echo(f"  {p0} (first) wins {s['first_wins']} ({100 * s['first_wins'] / n:.1f}%), "
               f"draws {s['draws']} ({100 * s['draws'] / n:.1f}%), "
               f"{p1} wins {s['second_wins']} ({100 * s['second_wins'] / n:.1f}%)")
    click.echo(f"  mean length {s['mean_plies']:.1f} plies; {s['games_per_s']:,.0f} games/s, "
               f"{s['plies_per_s']:,.0f} plies/s ({s['seconds']:.2f} s)")


@cli.command()
@click.option("--seed", type=SEED, default=0, show_default=True)
@click.option("--config", "config_paths", multiple=True, type=click.Path(dir_okay=False),
              help="Config file(s) to tour (default: every file in configs/).")
def tour(seed, config_paths):
    """The quick-start job: perft and random games on every configured game, with speeds.

    Reads the [game] and [tour] sections of configs/*.toml. (Later stages extend this into the
    whole train, rank and evaluate pipeline.)
    """
    from games._state import perft as c_perft
    from descent.config import all_configs, load_config
    configs = [(p, load_config(p)) for p in config_paths] if config_paths else all_configs()
    click.echo(f"{'game':<30} {'perft':>16} {'nodes/s':>14} {'random games/s':>15} "
               f"{'first/draw/second %':>22}")
    for path, cfg in configs:
        spec, depth, n = cfg["game"]["spec"], cfg["tour"]["perft_depth"], cfg["tour"]["random_games"]
        info = _load(spec)
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
@click.argument("game")
@click.option("--first", "agent_a", required=True, metavar="AGENT",
              help="Agent A, e.g. minibal_plus:time=0.5 (plays first in even games).")
@click.option("--second", "agent_b", required=True, metavar="AGENT", help="Agent B, e.g. mcts:iterations=2000.")
@click.option("--games", "n_games", type=COUNT, default=10, show_default=True)
@click.option("--workers", type=WORKERS, default=1, show_default=True,
              help="Worker processes (at most one per game).")
@click.option("--seed", type=SEED, default=0, show_default=True)
@click.option("--verbose", is_flag=True, help="Print every game's moves.")
@click.option("--ray", "ray_address", is_flag=False, flag_value="local", default=None, metavar="ADDRESS",
              help="Run on Ray: auto, an address, or local (a cluster started for the run).")
def match(game, agent_a, agent_b, n_games, workers, seed, verbose, ray_address):
    """Play AGENT A against AGENT B, alternating seats; print results with 95% confidence radii.

    An agent is ALGORITHM[:key=value,...]; `descent algorithms` lists them and their keys.
    """
    from tqdm import tqdm
    from descent.match import run_match
    from descent.stats import MatchSummary
    from search_ext.agents import AgentSpecError, parse_agent
    for text in (agent_a, agent_b):
        parse_agent(text)
    info = _load(game)
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


def _ray_runner(address, ship: bool = False, ship_replay: bool = False):
    """Members trained on Ray at ``address`` (None: local worker processes)."""
    if address is None:
        return None
    from descent.distributed import ray_runner
    return ray_runner(address, ship, ship_replay)


@cli.command()
@click.argument("game")
@click.option("--config", "config_path", type=click.Path(dir_okay=False), default=None,
              help="Config file (default: configs/<game>.toml).")
@click.option("--population", type=IntRange(1, 10_000), default=None, help="Networks to train.")
@click.option("--budget", default=None, help="Training time of each network, e.g. 70d, 2h, 10m.")
@click.option("--milestones", default=None, help="Named checkpoints, e.g. 20d,70d.")
@click.option("--workers", type=WORKERS, default=None, help="Members trained in parallel (at most one per member).")
@click.option("--out", "out", type=click.Path(file_okay=False), default=None,
              help="Run directory (default: checkpoints/<game>).")
@click.option("--seed", type=SEED, default=0, show_default=True)
@click.option("--max-games", type=IntRange(0, validate.MAX_COUNT), default=0,
              help="Stop each member after this many games in this call (0: run to the budget).")
@click.option("--ray", "ray_address", is_flag=False, flag_value="local", default=None, metavar="ADDRESS",
              help="Run on Ray: auto, an address, or local (a cluster started for the run).")
@click.option("--ray-ship", is_flag=True, help="With --ray and no shared file system: train each member "
              "in a scratch directory on its worker, its state copied back every --sync-every seconds.")
@click.option("--ray-ship-replay", is_flag=True, help="--ray-ship, the replay window shipped too (by "
              "default a worker rebuilds it by self-play).")
@_runtime_options()
def train(game, config_path, population, budget, milestones, workers, out, seed, max_games, ray_address,
          ray_ship, ray_ship_replay, **runtime):
    """Train a population of value networks by Descent self-play (resumable: rerun to continue).

    The options that override the config's [run] runtime keys change how fast self-play runs, not
    what a network learns: a rerun may change them (docs/options.md)."""
    from descent.config import default_config_path, load_config, parse_duration, parse_durations
    from training.run import default_run_dir, run_training
    from descent.config import check_config_game
    info = _load(game)
    cfg_path = config_path or default_config_path(info.spec)
    cfg = load_config(cfg_path)
    for w in check_config_game(cfg, cfg_path, info.spec):
        click.echo(w, err=True)
    apply_options(cfg, runtime)
    run_cfg = cfg["run"]
    budget = budget if budget is not None else run_cfg["budget"]      # '' is an error
    try:
        budget_s = parse_duration(budget)
        ms = parse_durations(milestones if milestones is not None else run_cfg["milestones"])
    except ValueError as exc:
        raise UserError(f"--budget/--milestones: {exc}") from None
    late = [n for n, s in ms if s > budget_s]
    if late:
        raise UserError(f"milestone(s) {', '.join(late)} lie beyond the budget {budget}")
    population = population or run_cfg["population"]
    workers = min(workers or run_cfg["workers"], population)
    run_dir = out or default_run_dir(info.spec)
    if config_path is None:
        from training.run import recorded_config
        note = recorded_config(run_dir, cfg, info.spec, seed)
        if note:
            click.echo(note, err=True)
    from pathlib import Path
    Path(run_dir).mkdir(parents=True, exist_ok=True)     # an unusable --out fails here, before any work
    click.echo(f"training {population} network(s) of {info.spec} for {budget_s:.0f} s each "
               f"(milestones {', '.join(n for n, _ in ms)}) in {run_dir}; config {cfg_path}")
    ray_address = ray_address or run_cfg["ray"] or None
    results = run_training(info.spec, cfg, population, budget_s, ms, workers, run_dir, seed,
                           threads=run_cfg["threads"], max_games=max_games,
                           remote=_ray_runner(ray_address, ray_ship, ray_ship_replay))
    for i, r in enumerate(results):
        click.echo(f"member {i}: {r['games']} games, {r['examples']} examples, "
                   f"{r['train_seconds']:.0f} s trained, milestones: {', '.join(r['milestones_done']) or 'none'}")
    click.echo(f"checkpoints: `descent checkpoints --out {run_dir}`")


@cli.command()
@click.argument("game", required=False)
@click.option("--out", "root", type=click.Path(file_okay=False), default=None,
              help="A run directory or a folder of runs (default: checkpoints/).")
def checkpoints(game, root):
    """List the milestone checkpoints of the training runs, and (without --out) the networks
    shipped in the repository (marked SHIPPED)."""
    from training.run import DEFAULT_ROOT, list_checkpoints
    from pathlib import Path
    spec = _load(game).spec if game else None
    if root is not None and not Path(root).is_dir():
        raise UserError(f"--out {root}: no such directory")
    rows = list_checkpoints(root or DEFAULT_ROOT, spec)
    if root is None:
        from descent.shipped import listing
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
@click.option("--max-games", type=IntRange(2, validate.MAX_COUNT), default=200, show_default=True,
              help="With --calibrate: games the calibration may spend.")
@click.option("--near-games", type=IntRange(2, validate.MAX_COUNT), default=40, show_default=True,
              help="With --calibrate: games the answer's own budget must have.")
@click.option("--seed", type=SEED, default=0, show_default=True)
def ship(game, run, early, final, member, command, cores, do_calibrate, opponent_budget, budget_range,
         max_games, near_games, seed):
    """Ship an early and a final network of a run in checkpoints/shipped/ with a model card
    (--run, --early, --final), and/or calibrate the balanced player on them (--calibrate)."""
    from descent.ship import calibrate_shipped, ship as do_ship
    from descent.calibrate import Unreachable, describe
    info = _load(game)
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
                                       max_games=max_games, near_games=near_games, seed=seed, echo=click.echo)
        except Unreachable as exc:
            raise UserError(f"{exc} (no calibration shipped)") from None
        click.echo(describe(result))
        click.echo(f"shipped: {result['path']}")


def _run_dir(game_spec, run):
    from training.run import default_run_dir
    return run or default_run_dir(game_spec)


def _print_pools(pools):
    from descent.report import pools_summary
    def shown(x):
        return "?" if x is None else str(x)
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
@click.option("--games-per-pair", type=IntRange(1, 10_000), default=16, show_default=True,
              help="Games per pair of networks (and per early/final pair): seat pairs sharing an opening.")
@click.option("--opening-plies", type=IntRange(0, 1000), default=4, show_default=True,
              help="Seeded random opening plies, the same for both seats of a pairing (0: none).")
@click.option("--workers", type=WORKERS, default=1, show_default=True)
@click.option("--seed", type=SEED, default=0, show_default=True)
@click.option("--ray", "ray_address", is_flag=False, flag_value="local", default=None, metavar="ADDRESS",
              help="Run on Ray: auto, an address, or local (a cluster started for the run).")
@click.option("--allow-untrained", is_flag=True,
              help="Also rank members whose final checkpoint never saw a self-play game.")
@click.option("--early", default=None, metavar="MILESTONE",
              help="The low pool's milestone (default: the run's first), e.g. 35m of 10m,35m,120m.")
@click.option("--final", default=None, metavar="MILESTONE",
              help="The milestone ranked and kept in the high pool (default: the run's last).")
def rank(game, run, agent, games_per_pair, opening_plies, workers, seed, ray_address, allow_untrained,
         early, final):
    """Round-robin tournament of the final networks; split them into high and low pools."""
    from descent.tournament import rank as do_rank
    info = _load(game)
    run_dir = _run_dir(info.spec, run)
    from descent.config import config_ray
    pools = do_rank(run_dir, info.spec, agent, games_per_pair, opening_plies, workers, seed,
                    ray_address=ray_address or config_ray(info.spec), echo=click.echo,
                    allow_untrained=allow_untrained, early=early, final=final)
    _print_pools(pools)
    click.echo(f"pools written to {run_dir}/pools.json; results in {run_dir}/results.db")


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
@click.option("--games-per-pair", type=IntRange(1, 10_000), default=8, show_default=True,
              help="Games per (high net, opponent) pairing: seat pairs sharing an opening.")
@click.option("--opening-plies", type=IntRange(0, 1000), default=4, show_default=True,
              help="Seeded random opening plies, the same for both seats of a pairing (0: none).")
@click.option("--workers", type=WORKERS, default=1, show_default=True)
@click.option("--seed", type=SEED, default=0, show_default=True)
@click.option("--ray", "ray_address", is_flag=False, flag_value="local", default=None, metavar="ADDRESS",
              help="Run on Ray: auto, an address, or local (a cluster started for the run).")
def evaluate(game, run, algorithms, extra_algorithms, times, iterations, opponent, opponent_time,
             games_per_pair, opening_plies, workers, seed, ray_address):
    """Balanced players (high nets) against the low pool or MCTS, at each search budget."""
    from descent.tournament import evaluate as do_evaluate
    info = _load(game)
    run_dir = _run_dir(info.spec, run)
    from descent.tournament import parse_budget
    algs = _list(algorithms, "--algorithms") + list(extra_algorithms)
    if iterations is not None:
        budgets = [f"iterations={validate.parse_int(x, '--iterations', 1, validate.MAX_COUNT)}"
                   for x in _list(iterations, "--iterations")]
    else:
        budgets = [parse_budget(x) for x in _list(times, "--times")]
    parse_budget(opponent_time)
    try:
        from descent.config import config_ray
        n = do_evaluate(run_dir, info.spec, algs, budgets, opponent, opponent_time, games_per_pair,
                        workers, seed, ray_address=ray_address or config_ray(info.spec),
                        opening_plies=opening_plies)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    click.echo(f"{n} match(es) played; results in {run_dir}/results.db; `descent report --run {run_dir}`")


@cli.command()
@click.option("--run", "runs", multiple=True, type=click.Path(file_okay=False),
              help="Run directories (default: every run under checkpoints/).")
@click.option("--game", "games_", multiple=True, help="Only these games.")
@click.option("--out", "out", type=click.Path(file_okay=False), default=None,
              help="Report directory (default: <first run>/report).")
def report(runs, games_, out):
    """Tables (gain, W/D/L, score with 95% intervals over independent units), figures and CSV of the
    evaluations, one table and set of figures per experiment (low pool or MCTS, and its budget)."""
    from pathlib import Path
    from descent.report import make_report
    from training.run import DEFAULT_ROOT
    dbs = [Path(r) / "results.db" for r in runs] if runs else sorted(DEFAULT_ROOT.glob("*/results.db"))
    missing = [str(d) for d in dbs if not d.exists()]
    if missing:
        raise UserError(f"no results database: {', '.join(missing)} (run `descent evaluate` first)")
    if not dbs:
        raise UserError(f"no results database under {DEFAULT_ROOT}")
    specs = [_load(g).spec for g in games_] or None
    out_dir = out or (Path(runs[0]) if runs else DEFAULT_ROOT) / "report"
    rep = make_report(dbs, out_dir, specs)
    if not rep["records"]:
        raise UserError("no evaluation results to report (run `descent evaluate` first)")
    click.echo(rep["table"])
    click.echo(f"report: {rep['out']}/table.txt, results.csv and {len(rep['figures'])} figure(s)")


@cli.command()
@click.argument("game", default="reversi(size=6)")
@click.option("--population", type=IntRange(2, 10_000), default=4, show_default=True)
@click.option("--budget", default="2m", show_default=True, help="Training time of each network.")
@click.option("--milestones", default="30s,2m", show_default=True, help="Early and final checkpoints.")
@click.option("--workers", type=WORKERS, default=2, show_default=True)
@click.option("--rank-agent", default="minimax:time=0.1,decision=safe", show_default=True)
@click.option("--algorithms", default="minimax,minibal_n,minibal_plus", show_default=True)
@click.option("--times", default="0.02,0.05,0.2", show_default=True)
@click.option("--iterations", default=None, help="Iteration budgets instead of times.")
@click.option("--opponent-time", default="0.05", show_default=True)
@click.option("--games-per-pair", type=IntRange(1, 10_000), default=8, show_default=True,
              help="Games per pair in rank and evaluate (seat pairs sharing an opening).")
@click.option("--opening-plies", type=IntRange(0, 1000), default=2, show_default=True)
@click.option("--out", "out", type=click.Path(file_okay=False), default=None)
@click.option("--seed", type=SEED, default=0, show_default=True)
@click.option("--ray", "ray_address", is_flag=False, flag_value="local", default=None, metavar="ADDRESS",
              help="Run on Ray: auto, an address, or local (a cluster started for the run).")
@click.option("--ray-ship", is_flag=True, help="With --ray and no shared file system: train each member "
              "in a scratch directory on its worker, its state copied back every --sync-every seconds.")
@click.option("--ray-ship-replay", is_flag=True, help="--ray-ship, the replay window shipped too (by "
              "default a worker rebuilds it by self-play).")
@_runtime_options()
def pipeline(game, population, budget, milestones, workers, rank_agent, algorithms, times, iterations,
             opponent_time, games_per_pair, opening_plies, out, seed, ray_address, ray_ship,
             ray_ship_replay, **runtime):
    """The whole protocol on one game, small: train a population, rank it, evaluate the balancing
    algorithms, report. Every stage resumes where it stopped when the command is rerun."""
    from pathlib import Path
    from descent.config import default_config_path, load_config, parse_duration, parse_durations
    from descent.report import make_report
    from descent.tournament import evaluate as do_evaluate, rank as do_rank
    from training.run import run_training
    from descent.config import check_config_game
    from descent.tournament import parse_budget
    info = _load(game)
    cfg_path = default_config_path(info.spec)
    cfg = load_config(cfg_path)
    for w in check_config_game(cfg, cfg_path, info.spec):
        click.echo(w, err=True)
    apply_options(cfg, runtime)
    try:
        budget_s, ms = parse_duration(budget), parse_durations(milestones)
    except ValueError as exc:
        raise UserError(f"--budget/--milestones: {exc}") from None
    if len(ms) < 2:
        raise UserError("the pipeline needs two milestones: an early and a final checkpoint")
    if ms[-1][1] > budget_s:
        raise UserError(f"milestone {ms[-1][0]} lies beyond the budget {budget}")
    from search_ext.agents import parse_agent
    parse_agent(rank_agent)
    algs = _list(algorithms, "--algorithms")
    budgets = ([f"iterations={validate.parse_int(x, '--iterations', 1, validate.MAX_COUNT)}"
                for x in _list(iterations, "--iterations")] if iterations is not None
               else [parse_budget(x) for x in _list(times, "--times")])
    for alg in algs:
        parse_agent(alg + ":" + budgets[0] if ":" not in alg else alg + "," + budgets[0])
    parse_budget(opponent_time)
    workers = min(workers, population)
    run_dir = Path(_run_dir(info.spec, out))
    from training.run import recorded_config
    note = recorded_config(run_dir, cfg, info.spec, seed)
    if note:
        click.echo(note, err=True)
    ray_address = ray_address or cfg["run"]["ray"] or None
    click.echo(f"[1/4] training {population} networks of {info.spec} for {budget} each in {run_dir}")
    run_training(info.spec, cfg, population, budget_s, ms, workers, run_dir, seed,
                 threads=cfg["run"]["threads"], remote=_ray_runner(ray_address, ray_ship, ray_ship_replay))
    click.echo(f"[2/4] ranking them ({rank_agent})")
    pools = do_rank(run_dir, info.spec, rank_agent, games_per_pair, opening_plies, workers, seed,
                    ray_address=ray_address, echo=click.echo)
    _print_pools(pools)
    click.echo(f"[3/4] evaluating {', '.join(algs)} at {', '.join(budgets)} against the low pool")
    do_evaluate(run_dir, info.spec, algs, budgets, "pool", opponent_time, games_per_pair, workers, seed,
                ray_address=ray_address, opening_plies=opening_plies)
    click.echo("[4/4] report")
    rep = make_report([run_dir / "results.db"], run_dir / "report", [info.spec])
    click.echo(rep["table"])
    click.echo(f"report written to {rep['out']} (table.txt, results.csv, figures "
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
@click.option("--ray", "ray_address", is_flag=False, flag_value="local", default=None, metavar="ADDRESS",
              help="Run on Ray: auto, an address, or local (a cluster started for the run).")
def experiment(file, runs, report_dir, stages, only_games, ray_address):
    """Run an experiment file (configs/experiments/*.toml): train, rank, evaluate against the low
    pool and MCTS, report. Every stage resumes where it stopped when the command is rerun."""
    from descent.experiment import run_experiment
    try:
        run_experiment(file, runs, report_dir, stages or ("train", "rank", "evaluate", "report"),
                       echo=click.echo, ray_address=ray_address, only_games=list(only_games) or None)
    except ValueError as exc:
        raise UserError(str(exc)) from None


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
@click.option("--max-games", type=IntRange(2, validate.MAX_COUNT), default=400, show_default=True,
              help="Games the design may spend in all.")
@click.option("--near-games", type=IntRange(2, validate.MAX_COUNT), default=40, show_default=True,
              help="Games the answer's own budget must have before it is the answer.")
@click.option("--precision", type=click.FloatRange(0.0, 1.0, min_open=True), default=0.1, show_default=True,
              help="Stop when the 95% interval of the fitted gain (or score) at the answer is this narrow "
                   "(half-width).")
@click.option("--run", "run", type=click.Path(file_okay=False), default=None,
              help="Run directory (default: checkpoints/<game>); results in <run>/calibrations/.")
@click.option("--seed", type=SEED, default=0, show_default=True)
@click.option("--opening-plies", type=IntRange(0, 1000), default=4, show_default=True,
              help="Seeded random opening plies, the same for both seats of a pair, another for every "
                   "pair and budget (0: none; deterministic players then replay one game per seat).")
@click.option("--verbose", is_flag=True, help="Print every game.")
@click.option("--ray", "ray_address", is_flag=False, flag_value="local", default=None, metavar="ADDRESS",
              help="Run the games on Ray (as many at once as the cluster has CPUs): auto, an address, "
                   "or local (a cluster started for the run).")
def calibrate(game, algorithm, against, target, metric, unit, budget_range, opponent_budget, max_games,
              near_games, precision, run, seed, opening_plies, verbose, ray_address):
    """Find the search budget at which a balanced player's gain (or score) against an opponent
    reaches a target, from a logistic curve in log-budget fitted to every game (resumable: rerun to
    continue)."""
    from pathlib import Path
    from descent.calibrate import Settings, Unreachable, calibrate as do_calibrate, describe
    info = _load(game)
    if budget_range is None:
        budget_range = "1:10000" if unit == "iterations" else "0.001:10"
    parts = validate.text(budget_range, "--range", max_len=64).split(":")
    if len(parts) != 2:
        raise UserError(f"--range {budget_range!r}: expected LOW:HIGH, e.g. 1:10000")
    low, high = (validate.parse_real(x, f"--range {budget_range!r}", 0.0, None, lo_open=True) for x in parts)
    s = Settings(info.spec, algorithm=algorithm, against=against, target=target, metric=metric, unit=unit,
                 low=low, high=high, opponent_budget=opponent_budget, seed=seed, max_games=max_games,
                 near_games=near_games, precision=precision, opening_plies=opening_plies)
    run_dir = Path(_run_dir(info.spec, run))
    click.echo(f"calibrating {algorithm} on {info.spec} against {against} to {metric} {target:+g} "
               f"({unit} {budget_range}); results in {run_dir}/calibrations/")
    try:
        from descent.config import config_ray
        result = do_calibrate(s, run_dir, echo=click.echo, progress=verbose,
                              ray_address=ray_address or config_ray(info.spec))
    except Unreachable as exc:
        raise UserError(str(exc)) from None
    click.echo(describe(result))
    click.echo(f"use it: descent play {info.spec} --level balanced; descent evaluate {info.spec} "
               f"--algorithm {algorithm.partition(':')[0]}:calibrated")


@cli.command()
@click.argument("game")
@click.option("--level", type=click.Choice(["easy", "medium", "hard", "balanced", "strongest", "adaptive"]),
              default="balanced", show_default=True,
              help="balanced uses the calibrated budget when there is one; adaptive follows --player's results.")
@click.option("--player", default=None, metavar="NAME",
              help="With --level adaptive: the person's name (their profile lives in the data directory).")
@click.option("--opponent", default=None, metavar="AGENT", help="Any agent spec instead of a level.")
@click.option("--net", default="best", show_default=True, help="A network checkpoint, best, or none.")
@click.option("--seat", type=click.Choice(["first", "second"]), default="first", show_default=True)
@click.option("--time", "think", type=Seconds(), default=None, help="Seconds per computer move (default 1, or the "
              "calibrated budget for --level balanced).")
@click.option("--iterations", type=COUNT, default=None, help="Iterations per move instead of time.")
@click.option("--elo", type=click.FloatRange(-1e5, 1e5), default=None, metavar="N",
              help="Play the rated setting nearest to Elo N (instead of --level; the scale of the game's "
                   "rating table: docs/strength.md).")
@click.option("--plain", is_flag=True, help="Text lines only, no colours (for screen readers).")
@click.option("--save", type=click.Path(dir_okay=False), default=None, help="Save the game record here.")
@click.option("--seed", type=SEED, default=0, show_default=True)
@click.pass_context
def play(ctx, game, level, player, opponent, net, seat, think, iterations, elo, plain, save, seed):
    """Play GAME against a balanced (or easy, medium, hard, strongest) computer opponent."""
    from descent.api import Opponent
    from descent.play import play as run_play
    info = _load(game)
    if save is not None:
        _check_writable(save, "--save")        # before the game, not after it
    net = None if net.lower() in ("none", "") else net
    if level == "adaptive" and not player and not opponent:
        raise UserError("--level adaptive needs --player NAME (whose results it adapts to)")
    if player and level != "adaptive":
        raise UserError("--player is only used with --level adaptive")
    if elo is not None and ctx.get_parameter_source("level") != click.core.ParameterSource.DEFAULT:
        raise UserError("--elo picks the level itself: give --elo or --level, not both")
    bot = Opponent(info.spec, level=level, net=net, time=think, iterations=iterations, seed=seed,
                   agent=opponent, player=player, elo=elo)
    run_play(info.spec, bot, 0 if seat == "first" else 1, plain, save)


def _check_writable(path: str, option: str) -> None:
    """Refuse a file path that cannot be written (a directory, a missing or read-only folder)."""
    import os
    from pathlib import Path
    p = Path(validate.text(path, option, GameError, ascii=False))
    if p.is_dir():
        raise UserError(f"{option} {path}: is a directory")
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise UserError(f"{option} {path}: the folder {parent} does not exist")
    if not os.access(parent, os.W_OK) or (p.exists() and not os.access(p, os.W_OK)):
        raise UserError(f"{option} {path}: not writable")


@cli.command()
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on (another than localhost lets other machines play).")
@click.option("--port", type=IntRange(1, 65535), default=8000, show_default=True)
@click.option("--root", "root", type=click.Path(file_okay=False), default=None,
              help="Folder of your trained runs (default: checkpoints/).")
@click.option("--time", "think", type=Seconds(), default=None, help="Seconds per computer move (default: a "
              "level's rated or calibrated budget where the game has one, else 1; a budget given here "
              "hides the levels' ratings, which hold at their own budgets).")
@click.option("--iterations", type=COUNT, default=None, help="Iterations per computer move instead of time.")
@click.option("--max-games", type=IntRange(1, 1000), default=16, show_default=True,
              help="Games open at once (browser tabs).")
def serve(host, port, root, think, iterations, max_games):
    """Play in the browser: a local web server with a page to play every game that has a shipped
    or trained network, at every level of `descent play`."""
    try:
        import uvicorn
        from descent.web.app import create_app
    except ImportError as exc:
        raise UserError(f"descent serve needs the web extra ({exc.name} is missing): "
                        f"pip install 'descent[web]'") from None
    from pathlib import Path
    if root is not None and not Path(root).is_dir():
        raise UserError(f"--root {root}: no such directory")
    app = create_app(root=root, max_games=max_games, time_per_move=think, iterations=iterations)
    import socket
    try:                 # bound here, so that a port in use is one line, before anything starts
        family, _, _, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
    except OSError as exc:
        raise UserError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    names = ", ".join(g["spec"] for g in app.state.hub.offered) or "none (train one with `descent train`)"
    shown = f"[{host}]" if ":" in host else host
    click.echo(f"descent serve: play at http://{shown}:{port}/  (games: {names}; Ctrl-C stops)")
    if host not in ("127.0.0.1", "localhost", "::1"):
        click.echo(f"Listening on {host}: anyone who can reach it can play and create player profiles.")
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])


@cli.command()
def algorithms():
    """List the search algorithms an agent can use, with their keys and defaults."""
    from search_ext.agents import describe_algorithms
    click.echo(describe_algorithms())


@cli.command()
@click.argument("game")
@click.option("--protocol", type=click.Choice(["uci", "gtp"]), default=None,
              help="Default: gtp for havannah, gomoku, connect6, reversi and tic-tac-toe; uci (Fairy-Stockfish's "
                   "variant dialect for xiangqi and breakthrough) for the others.")
@click.option("--level", type=click.Choice(["easy", "medium", "hard", "balanced", "strongest"]),
              default="balanced", show_default=True, help="The level, as for `descent play`.")
@click.option("--elo", type=Real(-10_000, 10_000), default=None,
              help="The setting nearest to this rating instead of a level.")
@click.option("--net", default="best", show_default=True, help="A network checkpoint, best, or none.")
@click.option("--time", "think", type=Seconds(), default=None,
              help="Seconds per move when the GUI gives no budget (default: the level's).")
@click.option("--iterations", type=COUNT, default=None, help="Iterations per move instead of time.")
@click.option("--seed", type=SEED, default=0, show_default=True)
def engine(game, protocol, level, elo, net, think, iterations, seed):
    """Speak UCI or GTP on stdin/stdout, for GUIs and match runners (docs/engines.md)."""
    from descent.protocols.notation import default_protocol, gtp_game
    from descent.protocols.player import Settings
    info = _load(game)
    protocol = protocol or default_protocol(info.name)
    if protocol == "gtp":
        gtp_game(info)
    net = None if net.lower() in ("none", "") else net
    settings = Settings(level=level, net=net, time=think, iterations=iterations, seed=seed, elo=elo)
    if protocol == "gtp":
        from descent.protocols.gtp import GtpServer as Server
    else:
        from descent.protocols.uci import UciServer as Server
    server = Server(info.spec, settings)       # errors (bad --net, no rating table) before any I/O
    try:
        server.run()
    except (KeyboardInterrupt, BrokenPipeError):
        pass


def main() -> None:
    cli(prog_name="descent")


if __name__ == "__main__":
    main()
