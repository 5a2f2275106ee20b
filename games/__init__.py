"""Game engines (compiled) and their registry.

>>> import games
>>> s = games.new_state("tic_tac_toe")
>>> s.push("b2"); s.legal_moves.count()
8
"""
from games.errors import (GameError, GameOverError, IllegalMoveError, InvalidGameSpecError,
                          InvalidMoveError, InvalidPositionError, UnknownGameError, WrongGameError)
from games.registry import GameDef, GameInfo, Param, load, names, new_state, parse_spec, register
from games import plugins  # noqa: F401  (finds the games written in Python: module:Class, entry points)

register(GameDef(
    name="tic_tac_toe", module="games.tic_tac_toe", state_class="TicTacToeState",
    summary="3x3, three in a row wins; x moves first"))

register(GameDef(
    name="reversi", module="games.reversi", state_class="ReversiState",
    summary="Othello: flank to flip, a player without a move passes (a pass is a ply); most discs wins",
    params=(Param("size", int, 8, "board side", choices=(6, 8, 10)),)))

register(GameDef(
    name="breakthrough", module="games.breakthrough", state_class="BreakthroughState",
    summary="two home rows each; step forward or diagonally, capture diagonally; reach the far row or "
            "capture all to win",
    params=(Param("rows", int, 8, "board rows", min=4, max=16),
            Param("cols", int, 8, "board columns", min=2, max=16))))

register(GameDef(
    name="outer_open_gomoku", module="games.connect", state_class="OuterOpenGomokuState",
    summary="five or more in a row wins; black's first stone on the two outermost lines; full board draws",
    params=(Param("size", int, 15, "board side", min=7, max=19),)))

register(GameDef(
    name="connect6", module="games.connect", state_class="Connect6State",
    summary="black places 1 stone, then 2 per turn (one ply per stone); six or more in a row wins",
    params=(Param("size", int, 19, "board side", min=7, max=25),)))

# ---- the Minibal paper's games (issue 6) ----
register(GameDef(
    name="chess", module="games.chess", state_class="ChessState",
    summary="FIDE chess with automatic draws (stalemate, insufficient material, threefold repetition, "
            "50-move rule)"))

register(GameDef(
    name="xiangqi", module="games.xiangqi", state_class="XiangqiState",
    summary="Chinese chess: flying-general ban, stalemate loses; threefold repetition and 60 moves each "
            "without capture draw"))

register(GameDef(
    name="international_draughts", module="games.draughts", state_class="DraughtsState",
    summary="FMJD draughts: flying kings, compulsory maximal capture; 8x8 is the Brazilian variant",
    params=(Param("board", int, 10, "board side", choices=(8, 10)),)))

register(GameDef(
    name="lines_of_action", module="games.loa", state_class="LinesOfActionState",
    summary="Olympiad rules: connect all your pieces; simultaneous connection draws; no move passes",
    params=(Param("board", int, 8, "board side", choices=(6, 8)),)))

register(GameDef(
    name="havannah", module="games.havannah", state_class="HavannahState",
    summary="hexagonal board; win by ring, bridge or fork; swap rule",
    params=(Param("base", int, 8, "cells per side", min=4, max=10),
            Param("swap", bool, True, "pie rule: the second player may take over the first stone"))))

# ---- LoBoGames' games (issue 7) ----
register(GameDef(
    name="tapatan", module="games.tapatan", state_class="TapatanState",
    summary="3x3 points with both diagonals; place 3 pieces each, then move along lines; three in a row",
    params=(Param("start", str, "placement", "placement phase, or the LoBoGames app's preset start",
                  choices=("placement", "preset")),)))

register(GameDef(
    name="alquerque", module="games.alquerque", state_class="AlquerqueState",
    summary="5x5 alquerque board, 12 pieces each; step or jump along lines; no move loses",
    params=(Param("rules", str, "lobogames", "lobogames: compulsory multiple captures; ludii: optional "
                  "single captures", choices=("lobogames", "ludii")),)))

register(GameDef(
    name="tsoro_yematatu", module="games.tsoro", state_class="TsoroYematatuState",
    summary="7-point triangle, 3 pieces each; drop, then move or jump; three in a row"))

register(GameDef(
    name="five_field_kono", module="games.kono", state_class="FiveFieldKonoState",
    summary="5x5 points, diagonal steps, 7 pieces each; occupy all the opponent's starting points"))

__all__ = ["GameError", "GameOverError", "WrongGameError", "IllegalMoveError", "InvalidGameSpecError", "InvalidMoveError",
           "InvalidPositionError", "UnknownGameError", "GameDef", "GameInfo", "Param", "load",
           "names", "new_state", "parse_spec", "register"]
