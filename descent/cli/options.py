"""What the commands of ``descent`` share: the group and its one-line errors, the parameter
types, and every option that more than one command takes, declared here once (``seed_option``,
``workers_option``, ``games_per_pair_option``, ``opening_plies_option``, ``ray_option``,
``ray_ship_options``, ``max_games_option``, ``min_games_option``, ``calibration_budget_options``,
``runtime_options``, ...). The commands live in the
modules beside this one, one per group of commands.
"""
from __future__ import annotations

import os
from pathlib import Path

import click

from games import validate
from games.errors import GameError


class DescentGroup(click.Group):
    """A click group that turns the project's input errors into one-line CLI errors."""

    def parse_args(self, ctx, args):
        for arg in args:            # (a shell cannot pass one; an API caller can)
            if isinstance(arg, str) and "\x00" in arg:
                raise UserError(f"argument {arg!r} contains a NUL character")
        ctx.meta["descent.argv"] = [a for a in args if isinstance(a, str)]
        return super().parse_args(ctx, args)

    def invoke(self, ctx):
        # a game written in Python (``module:Class``) is imported only when this command line names
        # it, never because a file or a request does (games.plugins.restrict_ad_hoc); the previous
        # rule comes back after the command (an API caller invoking the CLI in its own process)
        from games import plugins  # lazy: CLI start-up (each command loads only its own modules)
        before = plugins.ad_hoc_allowed()
        plugins.restrict_ad_hoc(plugins.ad_hoc_names(ctx.meta.get("descent.argv", [])))
        try:
            return self._invoke(ctx)
        finally:
            plugins.restrict_ad_hoc(before)

    def _invoke(self, ctx):
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
        if isinstance(value, str) and validate.INT_TEXT.fullmatch(value.strip(validate.ASCII_SPACE)) is None:
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
    from training.options import option_fields  # lazy: CLI start-up (each command loads only its own modules)

    def decorate(f):
        for opt in reversed([o for o in option_fields(options_class) if o.info.cli]):
            info = opt.info
            kind: click.ParamType
            if info.choices is not None:
                kind = click.Choice([str(c) for c in info.choices])
            elif opt.type is int:
                kind = IntRange(None if info.min is None else int(info.min),
                                None if info.max is None else int(info.max))
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


SEED = IntRange(0, 2 ** 31 - 1)
COUNT = IntRange(1, validate.MAX_COUNT)
WORKERS = IntRange(1, 1024)

RAY_HELP = "Run on Ray: auto, an address, or local (a cluster started for the run)."
PAIRING_OPENING_HELP = "Seeded random opening plies, the same for both seats of a pairing (0: none)."


# ---- the options more than one command takes ------------------------------------------------------

def seed_option(f):
    """``--seed``: the run's random seed."""
    return click.option("--seed", type=SEED, default=0, show_default=True)(f)


def workers_option(default=1, help: str | None = None, show_default: bool | None = True):
    """``--workers``: worker processes (``default`` None: the config's)."""
    return click.option("--workers", type=WORKERS, default=default, show_default=show_default, help=help)


def games_per_pair_option(default: int, help: str):
    """``--games-per-pair``: games per pairing, seat pairs sharing an opening."""
    return click.option("--games-per-pair", type=IntRange(1, 10_000), default=default, show_default=True,
                        help=help)


def opening_plies_option(default: int = 4, help: str | None = PAIRING_OPENING_HELP):
    """``--opening-plies``: seeded random opening plies."""
    return click.option("--opening-plies", type=IntRange(0, 1000), default=default, show_default=True,
                        help=help)


def ray_option(help: str = RAY_HELP):
    """``--ray [ADDRESS]``: run on Ray (a flag alone: a local cluster)."""
    return click.option("--ray", "ray_address", is_flag=False, flag_value="local", default=None,
                        metavar="ADDRESS", help=help)


def ray_ship_options(f):
    """``--ray-ship`` and ``--ray-ship-replay``: members trained in a scratch directory of their
    Ray worker, synced back (``descent.plan``)."""
    f = click.option("--ray-ship-replay", is_flag=True, help="--ray-ship, the replay window shipped too "
                     "(by default a worker rebuilds it by self-play).")(f)
    return click.option("--ray-ship", is_flag=True, help="With --ray and no shared file system: train "
                        "each member in a scratch directory on its worker, its state copied back every "
                        "--sync-every seconds.")(f)


def max_games_option(f):
    """``--max-games``: a game budget of each member in this call (``descent.plan``)."""
    return click.option("--max-games", type=IntRange(0, validate.MAX_COUNT), default=0,
                        help="Stop each member after this many games in this call (0: run to the "
                             "budget).")(f)


def min_games_option(default: int | None):
    """``--min-games``: the budget's floor of finished games per member (``descent.plan``)."""
    def deco(f):
        return click.option("--min-games", type=IntRange(0, validate.MAX_COUNT), default=default,
                            show_default=default is not None,
                            help="The budget's floor: each network finishes at least this many "
                                 "self-play games, however slow the machine (its time is spent AND "
                                 "the floor reached; each milestone waits for its share). Default: "
                                 "the config's [run] min_games." if default is None else
                                 "The budget's floor: each network finishes at least this many "
                                 "self-play games, however slow the machine (its time is spent AND "
                                 "the floor reached; each milestone waits for its share).")(f)
    return deco


def calibration_budget_options(f):
    """``--max-games``, ``--near-games`` and ``--precision``: when a calibration stops
    (``descent.calibrate.Settings``; ``descent calibrate`` and ``descent ship --calibrate``)."""
    f = click.option("--precision", type=click.FloatRange(0.0, 1.0, min_open=True), default=0.1,
                     show_default=True, help="Stop when the 95% interval of the fitted gain (or score) at "
                     "the answer is this narrow (half-width).")(f)
    f = click.option("--near-games", type=IntRange(2, validate.MAX_COUNT), default=40, show_default=True,
                     help="Games the answer's neighbourhood (the budgets of the root's 95% interval) "
                     "must have before it is the answer.")(f)
    return click.option("--max-games", type=IntRange(2, validate.MAX_COUNT), default=400,
                        show_default=True, help="Games the calibration may spend in all.")(f)


def net_option(f):
    """``--net``: the network of a computer player."""
    return click.option("--net", default="best", show_default=True,
                        help="A network checkpoint, best, or none.")(f)


def iterations_option(help: str = "Iterations per move instead of time."):
    """``--iterations``: a computer player's iterations per move instead of a time."""
    return click.option("--iterations", type=COUNT, default=None, help=help)


def runtime_options():
    """One option per runtime field of ``training.options.RuntimeOptions`` (``click_options``)."""
    from training.options import RuntimeOptions  # lazy: CLI start-up (each command loads only its own modules)
    return click_options(RuntimeOptions)


# ---- helpers of the commands ---------------------------------------------------------------------

def shipped_option(f):
    return click.option("--shipped", "base", type=click.Path(file_okay=False, exists=True), default=None,
                        help="The folder of shipped networks and their rating tables (default: the package's)."
                        )(f)


def split_option(text: str, option: str) -> list[str]:
    """A comma-separated option value: no empty list, no empty item."""
    return validate.split_list(text, option, GameError)


def load_game(spec: str):
    import games  # lazy: CLI start-up (each command loads only its own modules)
    return games.load(spec)


def run_dir_of(game_spec, run):
    """The run directory given, else the game's default one."""
    from training.run import default_run_dir  # lazy: CLI start-up (each command loads only its own modules)
    return run or default_run_dir(game_spec)


def check_writable(path: str, option: str) -> None:
    """Refuse a file path that cannot be written (a directory, a missing or read-only folder)."""
    p = Path(validate.text(path, option, GameError, ascii=False))
    if p.is_dir():
        raise UserError(f"{option} {path}: is a directory")
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise UserError(f"{option} {path}: the folder {parent} does not exist")
    if not os.access(parent, os.W_OK) or (p.exists() and not os.access(p, os.W_OK)):
        raise UserError(f"{option} {path}: not writable")


@click.group(cls=DescentGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="descent")
def cli():
    """descent: self-play Descent training and balanced play for two-player board games."""
