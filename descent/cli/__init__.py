"""The ``descent`` command line, one module per group of commands.

Every command that takes a game takes a spec: ``NAME`` or ``NAME(key=value,...)``, for example
``reversi(size=6)``. Errors in the input (unknown game, bad parameter, malformed position or move)
print one line and exit with status 2; nothing is written.

``options``: the group, its one-line errors, the parameter types and the options several commands
share, declared once. The commands: ``tools`` (games, check-game, perft, show, random-match, tour, algorithms,
checkpoints, ship), ``playing`` (play, levels, serve, engine), ``protocol`` (match, rank, evaluate,
calibrate, report, rate-levels), ``training`` (train, pipeline, experiment: one training plan, ``descent.plan``).
"""
from __future__ import annotations

from descent.cli.options import UserError, cli, click_options
from descent.cli.playing import engine, play, serve
from descent.cli.protocol import calibrate, evaluate, match, rank, rate_levels, report
from descent.cli.tools import (algorithms, check_game, checkpoints, games_cmd, perft, random_match, ship, show,
                               tour)
from descent.cli.training import experiment, pipeline, train

__all__ = ["cli", "main", "UserError", "click_options", "algorithms", "calibrate", "check_game", "checkpoints",
           "engine",
           "evaluate", "experiment", "games_cmd", "match", "perft", "pipeline", "play", "random_match",
           "rank", "rate_levels", "report", "serve", "ship", "show", "tour", "train"]


def main() -> None:
    cli(prog_name="descent")
