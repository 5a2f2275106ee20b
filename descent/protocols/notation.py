"""Moves and positions between a game's notation and an engine protocol's.

UCI (``Dialect``): chess is UCI itself (the same long algebraic moves and FEN). Xiangqi and
breakthrough follow Fairy-Stockfish's UCI variant dialect (``UCI_Variant``): xiangqi's FEN is ours,
its ranks are numbered 1-10 where ours (ICCS) are 0-9 (``h2e2`` is Fairy-Stockfish's ``h3e3``, the
fact ``tests/test_xiangqi.py`` checks against pyffish); breakthrough's moves are ours and its FEN
writes the first player's pieces ``P`` and the second's ``p``, ``w``/``b`` to move, with a
fullmove counter where we keep a ply (breakthrough 8x8 is Fairy-Stockfish's built-in
``breakthrough``, other sizes are ``breakthroughRxC`` of the shipped ``variants.ini``). Any other game can
speak UCI with its own move notation and position text (``position fen`` then takes our position
text, a dialect of our own).

GTP (``GtpBoard``): vertices are a column letter from ``A`` skipping ``I`` (GTP's rule) and the row
number from the bottom, so our ``j10`` is GTP's ``K10`` on a board with more than 8 columns;
``pass`` (reversi) and ``swap`` (havannah's pie rule) are moves too. Colours: the first player is
``black`` except in havannah, whose first player is named ``white`` (our names are kept).
"""
from __future__ import annotations

import re

import games
from games.errors import GameError, InvalidMoveError, InvalidPositionError
from games.registry import parse_spec

GTP_LETTERS = "ABCDEFGHJKLMNOPQRSTUVWXYZ"       # GTP's column letters: no I
OUR_LETTERS = "abcdefghijklmnopqrstuvwxyz"
GTP_GAMES = ("havannah", "outer_open_gomoku", "connect6", "reversi", "tic_tac_toe")
UCI_GAMES = ("chess", "xiangqi", "breakthrough")
# the game parameter GTP's ``boardsize`` sets
BOARDSIZE_PARAM = {"havannah": "base", "outer_open_gomoku": "size", "connect6": "size", "reversi": "size"}


class ProtocolError(GameError):
    """A command, move or position an engine protocol cannot carry for this game."""


def default_protocol(game_name: str) -> str:
    """``uci`` or ``gtp``: the protocol a game speaks unless told otherwise."""
    return "gtp" if game_name in GTP_GAMES else "uci"


# ---- UCI -------------------------------------------------------------------------------------------

class Dialect:
    """How one game reads and writes UCI moves and positions (``variant``: the ``UCI_Variant`` name,
    None for chess and for games outside Fairy-Stockfish)."""

    def __init__(self, info):
        self.info = info
        self.name = info.name
        p = info.params
        self.variant = None
        if self.name == "xiangqi":
            self.variant = "xiangqi"
        elif self.name == "breakthrough":
            r, c = p["rows"], p["cols"]
            self.variant = "breakthrough" if (r, c) == (8, 8) else f"breakthrough{r}x{c}"
        self.fsf = self.name in UCI_GAMES      # Fairy-Stockfish (and chess GUIs) read the positions

    # moves
    def move_to_uci(self, state, action: int) -> str:
        text = state.move_to_str(action)
        if self.name == "xiangqi":
            m = re.fullmatch(r"([a-i])(\d)([a-i])(\d)", text)
            if m is None:
                raise AssertionError(f"xiangqi move text {text!r} is not file-rank-file-rank")
            f1, r1, f2, r2 = m.groups()
            return f"{f1}{int(r1) + 1}{f2}{int(r2) + 1}"
        return text

    def uci_to_text(self, move: str) -> str:
        """A UCI move in the game's own notation (not checked for legality)."""
        if self.name == "xiangqi":
            m = re.fullmatch(r"([a-i])(10|[1-9])([a-i])(10|[1-9])", move.strip().lower())
            if m is None:
                raise InvalidMoveError(f"xiangqi: malformed UCI move {move!r} (expected e.g. h3e3)")
            f1, r1, f2, r2 = m.groups()
            return f"{f1}{int(r1) - 1}{f2}{int(r2) - 1}"
        return move

    def parse_uci(self, state, move: str) -> int:
        """The action of a UCI move at ``state`` (``InvalidMoveError`` / ``IllegalMoveError``)."""
        return state.parse_move(self.uci_to_text(move))

    # positions
    def fen_to_position(self, fen: str) -> str:
        """A UCI ``position fen`` argument as our position text."""
        if self.name != "breakthrough":
            return fen
        parts = fen.split()
        if len(parts) < 2 or parts[1] not in ("w", "b"):
            raise InvalidPositionError(f"breakthrough: FEN {fen!r} needs a board and w or b to move")
        board = parts[0]
        if re.search(r"[^Pp0-9/]", board):
            raise InvalidPositionError(f"breakthrough: FEN {fen!r} may hold only P, p, digits and /")
        board = board.replace("P", "x").replace("p", "o")
        full = parts[-1] if len(parts) >= 3 else "1"
        if not full.isdigit() or int(full) < 1:
            raise InvalidPositionError(f"breakthrough: FEN {fen!r}: bad fullmove number {full!r}")
        ply = 2 * (int(full) - 1) + (parts[1] == "b")
        return f"{board} {'x' if parts[1] == 'w' else 'o'} {ply}"

    def position_to_fen(self, state) -> str:
        """The state's position as the protocol's FEN."""
        text = state.position()
        if self.name != "breakthrough":
            return text
        board, side, ply = text.split()
        board = board.replace("x", "P").replace("o", "p")
        return f"{board} {'w' if side == 'x' else 'b'} - - 0 {int(ply) // 2 + 1}"

    def startpos_fen(self) -> str:
        return self.position_to_fen(self.info.new_state())


# ---- GTP -------------------------------------------------------------------------------------------

def gtp_game(info) -> None:
    """Refuse a game GTP cannot carry (moves that are not single points). A game written in Python
    (a plugin's, OpenSpiel's) is carried when its first moves are written as points (``c3``: hex,
    havannah, y, othello from OpenSpiel)."""
    if info.name in GTP_GAMES or (info.definition.game_class is not None and _point_moves(info)):
        return
    raise ProtocolError(f"{info.spec}: GTP carries games whose moves are single points "
                        f"({', '.join(GTP_GAMES)}, and games written in Python whose moves are "
                        f"written as points, such as openspiel:hex); use --protocol uci")


def _point_moves(info) -> bool:
    """Whether every legal move of the initial position is written as a point (a letter and a
    number) within GTP's 25 columns."""
    state = info.new_state()
    texts = [state.move_to_str(a) for a in state.legal_actions_list()]
    return bool(texts) and all(re.fullmatch(r"[a-y]\d{1,2}", t) is not None for t in texts)


def colour_seat(info, word: str) -> int:
    """A GTP colour (``b``/``black``/``w``/``white``, any case) as a seat (0 first)."""
    w = word.strip().lower()
    if w in ("b", "black"):
        name = "black"
    elif w in ("w", "white"):
        name = "white"
    else:
        raise ProtocolError(f"invalid color {word!r}")
    if info.players == ("white", "black"):
        return 0 if name == "white" else 1
    return 0 if name == "black" else 1


def seat_colour(info, seat: int) -> str:
    if info.players == ("white", "black"):
        return ("white", "black")[seat]
    return ("black", "white")[seat]


_VERTEX = re.compile(r"([A-Za-z])(\d{1,2})")


def vertex_to_text(vertex: str) -> str:
    """A GTP vertex (``K10``, ``pass``, ``swap``) in our notation (``j10``)."""
    v = vertex.strip()
    if v.lower() in ("pass", "swap"):
        return v.lower()
    m = _VERTEX.fullmatch(v)
    if m is None or m.group(1).upper() not in GTP_LETTERS:
        raise InvalidMoveError(f"invalid vertex {vertex!r} (expected a letter A-Z without I and a number, "
                               f"or pass)")
    return OUR_LETTERS[GTP_LETTERS.index(m.group(1).upper())] + str(int(m.group(2)))


def text_to_vertex(text: str) -> str:
    """Our move text (``j10``, ``pass``, ``swap``) as a GTP vertex (``K10``)."""
    if text in ("pass", "swap"):
        return text
    m = re.fullmatch(r"([a-z])(\d+)", text)
    if m is None:
        raise ProtocolError(f"move {text!r} is not a point")
    return GTP_LETTERS[OUR_LETTERS.index(m.group(1))] + m.group(2)


def resized(info, size: int):
    """The game at GTP ``boardsize`` ``size`` (``ProtocolError`` when the game has no such size)."""
    key = BOARDSIZE_PARAM.get(info.name)
    name, params = parse_spec(info.spec)
    if key is None and info.definition.game_class is not None:   # a game written in Python
        if any(p.name == "board_size" for p in info.definition.params):
            key = "board_size"                                    # OpenSpiel's hex, havannah, y
        elif info.planes_shape[0] == info.planes_shape[1] == size:
            return info
    if key is None:
        current = None
        if info.name == "tic_tac_toe":
            current = 3
        if size == current:
            return info
        raise ProtocolError(f"{info.spec} has one board size")
    params = {**info.params, key: size}
    text = f"{name}({','.join(f'{k}={str(v).lower() if isinstance(v, bool) else v}' for k, v in params.items())})"
    try:
        return games.load(text)
    except GameError as exc:
        raise ProtocolError(str(exc)) from None
