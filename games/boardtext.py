"""Text helpers shared by the grid games: square names, FEN-like board rows, terminal drawings.

Coordinates: columns are letters from ``a`` (left), rows are numbers from ``1`` (bottom), as on a
chess board, so ``a1`` is the bottom-left square. Internally row 0 is the *top* row (the first row
of a position string and of the network encoding), so the square ``(r, c)`` is named
``letter(c) + str(height - r)``.

Board rows are written top to bottom, separated by ``/``; a digit run ``n`` stands for ``n`` empty
squares (as in FEN), ``.`` is one empty square.
"""
from __future__ import annotations

import re

from games import validate
from games.errors import GameError, InvalidMoveError, InvalidPositionError
from games.validate import is_digits

LETTERS = "abcdefghijklmnopqrstuvwxyz"
_SQUARE = re.compile(r"^([a-z])([0-9]{1,2})$")
MAX_SIDE = len(LETTERS)     # a board side is at most 26 squares (a column is one letter)

# The helpers below are called by the engines with checked values; called from outside with bad
# ones they raise ``GameError`` (sizes and indices are checked cheaply up front; a malformed grid
# is reported when it is met, without a pass over it on the good path).


def _side(value, what: str) -> int:
    if type(value) is not int or not 1 <= value <= MAX_SIDE:
        return validate.integer(value, f"boardtext: {what}", 1, MAX_SIDE)
    return value


def _bad_grid(fn: str, exc: Exception):
    raise GameError(validate.one_line(f"boardtext.{fn}: malformed grid or symbols ({exc})")) from None


def square_name(r: int, c: int, height: int) -> str:
    if (type(r) is not int or type(c) is not int or type(height) is not int
            or not 0 <= c < MAX_SIDE or not 0 <= r < height <= MAX_SIDE):
        height = _side(height, "height")
        validate.integer(r, "boardtext: row index", 0, height - 1)
        validate.integer(c, "boardtext: column index", 0, MAX_SIDE - 1)
    return f"{LETTERS[c]}{height - r}"


def parse_square(text: str, height: int, width: int, what: str = "square") -> tuple[int, int]:
    """``'c3'`` -> (row index from the top, column index); raises ``InvalidMoveError``."""
    validate.text(what, "boardtext: what", empty=True)
    text = validate.text(text, what, InvalidMoveError, max_len=64, empty=True)
    height, width = _side(height, "height"), _side(width, "width")
    m = _SQUARE.match(text.strip().lower())
    if not m:
        raise InvalidMoveError(f"malformed {what} {text!r} (expected a column letter and a row number, "
                               f"e.g. 'a1')")
    c = LETTERS.index(m.group(1))
    row = int(m.group(2))
    if c >= width or not 1 <= row <= height:
        raise InvalidMoveError(
            f"{what} {text!r} is off the {width}x{height} board (columns a-{LETTERS[width - 1]}, "
            f"rows 1-{height})")
    return height - row, c


def parse_board(text: str, height: int, width: int, symbols: str, game: str) -> list[list[int]]:
    """Parse FEN-like rows into a grid of indices into ``symbols`` (-1 for empty)."""
    game = validate.text(game, "boardtext: game", empty=True)
    text = validate.text(text, f"{game}: board", InvalidPositionError, empty=True)
    symbols = validate.text(symbols, "boardtext: symbols", empty=True)
    height, width = _side(height, "height"), _side(width, "width")
    rows = text.split("/")
    if len(rows) != height:
        raise InvalidPositionError(
            f"{game}: board {text!r} has {len(rows)} rows, expected {height}")
    grid = []
    for i, row in enumerate(rows):
        cells: list[int] = []
        j = 0
        while j < len(row):
            ch = row[j]
            if is_digits(ch):
                k = j
                while k < len(row) and is_digits(row[k]):
                    k += 1
                # bound the run before building anything: '999999999' is not a row
                n = int(row[j:k]) if k - j <= 3 else width + 1
                if n == 0:
                    raise InvalidPositionError(f"{game}: row {i + 1} of {text!r} has an empty run '0'")
                if len(cells) + n > width:
                    raise InvalidPositionError(
                        f"{game}: row {i + 1} of board {text!r} has more than {width} squares")
                cells.extend([-1] * n)
                j = k
                continue
            if ch == ".":
                cells.append(-1)
            elif ch in symbols:
                cells.append(symbols.index(ch))
            else:
                raise InvalidPositionError(
                    f"{game}: unexpected character {ch!r} in row {i + 1} of board {text!r} "
                    f"(allowed: '.', digits, {', '.join(repr(s) for s in symbols)})")
            j += 1
        if len(cells) != width:
            raise InvalidPositionError(
                f"{game}: row {i + 1} of board {text!r} has {len(cells)} squares, expected {width}")
        grid.append(cells)
    return grid


def format_board(grid, symbols: str) -> str:
    """Inverse of ``parse_board``, writing empty runs as digits."""
    out = []
    try:
        for row in grid:
            s, run = [], 0
            for v in row:
                if v < 0:
                    run += 1
                    continue
                if run:
                    s.append(str(run))
                    run = 0
                s.append(symbols[v])
            if run:
                s.append(str(run))
            out.append("".join(s))
    except (TypeError, IndexError, AttributeError) as exc:
        _bad_grid("format_board", exc)
    return "/".join(out)


def split_position(text: str, game: str, sides: str) -> tuple[str, int, int | None]:
    """Split ``'BOARD SIDE [PLY]'``; returns (board, side index, ply or None)."""
    game = validate.text(game, "boardtext: game", empty=True)
    text = validate.text(text, f"{game}: position", InvalidPositionError, empty=True)
    sides = validate.text(sides, "boardtext: sides")
    parts = text.split()
    if not 2 <= len(parts) <= 3:
        raise InvalidPositionError(
            f"{game}: position {text!r} must be 'BOARD SIDE [PLY]' (e.g. '3/3/3 {sides[0]}')")
    board, side = parts[0], parts[1]
    if len(side) != 1 or side not in sides:
        raise InvalidPositionError(
            f"{game}: side to move {side!r} in {text!r} must be one of {', '.join(sides)}")
    ply = None
    if len(parts) == 3:
        if not is_digits(parts[2]) or len(parts[2]) > 9:
            raise InvalidPositionError(f"{game}: ply {parts[2]!r} in {text!r} is not a number "
                                       f"(ASCII digits, at most 9)")
        ply = int(parts[2])
    return board, sides.index(side), ply


def draw_grid(grid, symbols: str, height: int, width: int, footer: str = "") -> str:
    """A board drawing with coordinates (plain ASCII, one line per row)."""
    height, width = _side(height, "height"), _side(width, "width")
    footer = validate.text(footer, "boardtext: footer", empty=True)
    lines = []
    letters = " ".join(LETTERS[:width])
    pad = len(str(height))
    lines.append(" " * (pad + 1) + letters)
    try:
        for r in range(height):
            cells = " ".join("." if v < 0 else symbols[v] for v in grid[r])
            lines.append(f"{height - r:>{pad}} {cells} {height - r}")
    except (TypeError, IndexError, AttributeError, KeyError) as exc:
        _bad_grid("draw_grid", exc)
    lines.append(" " * (pad + 1) + letters)
    if footer:
        lines.append(footer)
    return "\n".join(lines)
