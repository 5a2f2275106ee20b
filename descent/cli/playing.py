"""Playing against the computer: ``play`` (the terminal), ``serve`` (the browser), ``engine``
(UCI and GTP for GUIs and match runners).
"""
from __future__ import annotations

import socket
from pathlib import Path

import click

from descent.cli.options import (IntRange, Real, Seconds, UserError, check_writable, cli, iterations_option,
                                 load_game, net_option, seed_option, shipped_option)


@cli.command()
@click.argument("game")
@click.option("--level", type=click.Choice(["easy", "medium", "hard", "balanced", "strongest", "adaptive"]),
              default="balanced", show_default=True,
              help="balanced uses the calibrated budget when there is one; adaptive follows --player's results.")
@click.option("--player", default=None, metavar="NAME",
              help="With --level adaptive: the person's name (their profile lives in the data directory).")
@click.option("--opponent", default=None, metavar="AGENT", help="Any agent spec instead of a level.")
@net_option
@click.option("--seat", type=click.Choice(["first", "second"]), default="first", show_default=True)
@click.option("--time", "think", type=Seconds(), default=None, help="Seconds per computer move (default 1, or the "
              "calibrated budget for --level balanced).")
@iterations_option()
@click.option("--elo", type=click.FloatRange(-1e5, 1e5), default=None, metavar="N",
              help="Play the rated setting nearest to Elo N (instead of --level; the scale of the game's "
                   "rating table: docs/strength.md).")
@click.option("--plain", is_flag=True, help="Text lines only, no colours (for screen readers).")
@click.option("--save", type=click.Path(dir_okay=False), default=None, help="Save the game record here.")
@seed_option
@click.pass_context
def play(ctx, game, level, player, opponent, net, seat, think, iterations, elo, plain, save, seed):
    """Play GAME against a balanced (or easy, medium, hard, strongest) computer opponent."""
    from descent.api import Opponent  # lazy: CLI start-up (each command loads only its own modules)
    from descent.play import play as run_play  # lazy: CLI start-up (each command loads only its own modules)
    info = load_game(game)
    if save is not None:
        check_writable(save, "--save")        # before the game, not after it
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


@cli.command()
@click.argument("game")
@shipped_option
def levels(game, base):
    """List GAME's levels with what each does and its rating (docs/strength.md), and the range of --elo."""
    from descent import shipped, strength  # lazy: CLI start-up (each command loads only its own modules)
    from descent.levels import reference_text  # lazy: CLI start-up (each command loads only its own modules)
    info = load_game(game)
    t = strength.table(info.spec, base)
    rows = strength.describe_levels(info.spec, base)
    if t is None:
        have = sorted(c["game"] for d, c in shipped.entries(base) if (d / strength.TABLE_FILE).is_file())
        click.echo(f"{info.spec}: no rating table (games with one: {', '.join(have) or 'none'}); the levels:")
    else:
        click.echo(f"{info.spec}: Elo against {t['anchor']}, each level at {t['iterations']} iterations a "
                   f"move with the shipped network (docs/strength.md)")
    width = max(len(r["level"]) for r in rows)
    for r in rows:
        rating = r["rating"].replace(f" against {t['anchor']}", "") if r["rating"] and t else "not rated"
        click.echo(f"  {r['level']:<{width}}  {rating}: {r['about']}")
        if r["note"]:
            click.echo(f"  {'':<{width}}  ({r['note']})")
        for ref in r["reference"]:
            click.echo(f"  {'':<{width}}  {reference_text(ref)}")
    if t is not None:
        lo, hi = t["settings"][0]["elo"], t["settings"][-1]["elo"]
        click.echo(f"  --elo N plays the measured setting nearest to N, from {lo:+.0f} to {hi:+.0f} "
                   f"({len(t['settings'])} settings), and says how far it is from N")
        if not t.get("reference"):
            click.echo("  no level has been measured against an outside reference "
                       "(`descent rate-levels --phase reference`)")


@cli.command()
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on (another than localhost lets other machines play).")
@click.option("--port", type=IntRange(1, 65535), default=8000, show_default=True)
@click.option("--root", "root", type=click.Path(file_okay=False), default=None,
              help="Folder of your trained runs (default: checkpoints/).")
@click.option("--time", "think", type=Seconds(), default=None, help="Seconds per computer move (default: a "
              "level's rated or calibrated budget where the game has one, else 1; a budget given here "
              "hides the levels' ratings, which hold at their own budgets).")
@iterations_option("Iterations per computer move instead of time.")
@click.option("--max-games", type=IntRange(1, 1000), default=16, show_default=True,
              help="Games in progress at once (a finished or resigned game frees its slot).")
@click.option("--idle", type=Seconds(), default=600, show_default=True,
              help="Seconds without a request after which a game is closed (an open page asks every minute).")
@click.option("--game", "named", multiple=True, metavar="SPEC",
              help="Offer this game too, network or not (repeat for more): a plugin's (module:Class, an "
                   "entry point) or OpenSpiel's (openspiel:NAME) on a generic grid board; without a "
                   "network the computer evaluates by random playouts.")
def serve(host, port, root, think, iterations, max_games, idle, named):
    """Play in the browser: a local web server with a page to play every game that has a shipped
    or trained network, and the games named with --game, at every level of `descent play`."""
    try:
        import uvicorn  # lazy: optional extra
        from descent.web.app import create_app  # lazy: optional extra
    except ImportError as exc:
        from descent.resources import install_extra_command  # lazy: CLI start-up
        raise UserError(f"descent serve needs the web extra ({exc.name} is missing): "
                        f"{install_extra_command('web')}") from None
    if root is not None and not Path(root).is_dir():
        raise UserError(f"--root {root}: no such directory")
    specs = [load_game(spec).spec for spec in named]       # a bad spec: one line, before anything starts
    app = create_app(root=root, max_games=max_games, time_per_move=think, iterations=iterations,
                     idle_seconds=idle, named=specs)
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
@click.argument("game")
@click.option("--protocol", type=click.Choice(["uci", "gtp"]), default=None,
              help="Default: gtp for havannah, gomoku, connect6, reversi and tic-tac-toe; uci (Fairy-Stockfish's "
                   "variant dialect for xiangqi and breakthrough) for the others.")
@click.option("--level", type=click.Choice(["easy", "medium", "hard", "balanced", "strongest"]),
              default="strongest", show_default=True,
              help="The level, as for `descent play` (full strength by default, as engines are).")
@click.option("--elo", type=Real(-10_000, 10_000), default=None,
              help="The setting nearest to this rating instead of a level (its network and budget: not "
                   "with --level, --time, --iterations or another --net).")
@net_option
@click.option("--time", "think", type=Seconds(), default=None,
              help="Seconds per move when the GUI gives no budget (default: the level's).")
@iterations_option()
@seed_option
@click.pass_context
def engine(ctx, game, protocol, level, elo, net, think, iterations, seed):
    """Speak UCI or GTP on stdin/stdout, for GUIs and match runners (docs/engines.md)."""
    # lazy: CLI start-up (each command loads only its own modules)
    from descent.protocols.notation import default_protocol, gtp_game
    from descent.protocols.player import Settings  # lazy: CLI start-up (each command loads only its own modules)
    info = load_game(game)
    protocol = protocol or default_protocol(info.name)
    if protocol == "gtp":
        gtp_game(info)
    net = None if net.lower() in ("none", "") else net
    if elo is not None:
        # as `descent play --elo`: the rating is that of one measured setting (level, network, budget)
        if ctx.get_parameter_source("level") != click.core.ParameterSource.DEFAULT:
            raise UserError("--elo picks the level itself: give --elo or --level, not both")
        from descent import shipped  # lazy: CLI start-up (each command loads only its own modules)
        final = shipped.network(info.spec)
        other_net = net != "best" and not (net and final and Path(net).resolve() == Path(final).resolve())
        if think is not None or iterations is not None or other_net:
            given = ", ".join(o for o, on in (("--time", think is not None), ("--iterations", iterations is not None),
                                              (f"--net {net or 'none'}", other_net)) if on)
            raise UserError(f"--elo plays a rated setting of the shipped network at the budget it was rated at: "
                            f"it cannot be combined with {given}")
    settings = Settings(level=level, net=net, time=think, iterations=iterations, seed=seed, elo=elo)
    if protocol == "gtp":
        # lazy: CLI start-up (each command loads only its own modules)
        from descent.protocols.gtp import GtpServer as Server
    else:
        # lazy: CLI start-up (each command loads only its own modules)
        from descent.protocols.uci import UciServer as Server  # type: ignore[assignment]
    server = Server(info.spec, settings)       # errors (bad --net, no rating table) before any I/O
    try:
        server.run()
    except (KeyboardInterrupt, BrokenPipeError):
        pass
