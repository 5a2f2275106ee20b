"""Game engines (compiled) and their registry.

>>> import games
>>> s = games.new_state("tic_tac_toe")
>>> s.push("b2"); s.legal_moves.count()
8
"""
from games.errors import (GameError, IllegalMoveError, InvalidGameSpecError, InvalidMoveError,
                          InvalidPositionError, UnknownGameError)
from games.registry import GameDef, GameInfo, Param, load, names, new_state, parse_spec, register

register(GameDef(
    name="tic_tac_toe", module="games.tic_tac_toe", state_class="TicTacToeState",
    summary="3x3, three in a row wins; x moves first"))

__all__ = ["GameError", "IllegalMoveError", "InvalidGameSpecError", "InvalidMoveError",
           "InvalidPositionError", "UnknownGameError", "GameDef", "GameInfo", "Param", "load",
           "names", "new_state", "parse_spec", "register"]
