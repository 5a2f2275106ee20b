"""What the browser page draws: a game state as cells with coordinates, pieces and names, and its
legal moves as the squares a person clicks.

The geometry is read from the state itself, not kept per position: the board field of
``state.position()`` (FEN-like rows, top to bottom, a digit run for empty squares; docs/GAMES.md)
for every game but draughts, whose position is PDN and whose board is read from the drawing
``str(state)`` instead. Cell names are the game's own notation (``boardtext``: a column letter and
a row number from the bottom; xiangqi counts rows from 0; havannah's rows are numbered from the
top with the letters of a skewed grid; draughts and tsoro yematatu number their points).

Shapes:

* ``square``: a grid of squares (``dark`` marks the playing squares of draughts);
* ``hex``: havannah's hexagons, at x = column - row/2 (axial coordinates), pointy-top;
* ``points``: intersections joined by ``lines`` (tapatan, alquerque, tsoro yematatu).

A move is clicked as its squares: the tokens of its text that name cells (``e2e4`` -> e2, e4;
``28x17x8x19`` -> 28, 17, 8, 19). One square is a placement (one click); several are a piece moving
from the first to the last (two clicks; where several legal moves share both ends, the page asks
which). A move naming no square (``pass``, ``swap``) is a button.
"""
from __future__ import annotations

import math
import re

from games.boardtext import LETTERS
from descent.web import grid as generic

_LETTER_SQUARE = re.compile(r"[a-z][0-9]{1,2}")
_NUMBER_SQUARE = re.compile(r"[0-9]{1,3}")
NUMBERED = ("international_draughts", "tsoro_yematatu")   # games whose points are numbers
POINT_GAMES = ("tapatan", "alquerque", "tsoro_yematatu")

# tsoro yematatu's seven points (games/tsoro.pyx's drawing): 1 at the apex, 2 3 4 across the
# middle, 5 6 7 along the base; lines from the apex through 2-5, 3-6, 4-7 and the two cross rows
TSORO_POINTS = {"1": (2, 0), "2": (1, 1), "3": (2, 1), "4": (3, 1), "5": (0, 2), "6": (2, 2), "7": (4, 2)}
TSORO_LINES = [("1", "2"), ("2", "5"), ("1", "3"), ("3", "6"), ("1", "4"), ("4", "7"),
               ("2", "3"), ("3", "4"), ("5", "6"), ("6", "7")]


def _expand_row(row: str) -> list[str | None]:
    """One FEN-like row: a digit run is that many empty cells, ``.`` one, any other letter a piece."""
    cells: list[str | None] = []
    for run, ch in re.findall(r"([0-9]+)|(.)", row):
        if run:
            cells.extend([None] * int(run))
        else:
            cells.append(None if ch == "." else ch)
    return cells


def owner(game: str, piece: str | None) -> int | None:
    """The seat (0: first player) a piece symbol belongs to."""
    if piece is None:
        return None
    if piece in "xX":
        return 0
    if piece in "oO":
        return 1
    if game in ("international_draughts", "havannah"):
        return 0 if piece in "wW" else 1
    return 0 if piece.isupper() else 1       # chess, xiangqi: upper case is white/red


COUNTED = ("reversi",)             # games decided by the pieces on the board: the page counts them
COLOURS = ("black", "white")       # how the page draws seat 0's and seat 1's pieces (static/style.css)


def side_names(players) -> list[str]:
    """The seats as the page names them: a game whose players are marks (x, o) by the colour of its
    pieces on the page, the mark beside it ("black (x)"); others by their own names (white, red)."""
    if tuple(players) == ("x", "o"):
        return [f"{colour} ({mark})" for colour, mark in zip(COLOURS, players)]
    return list(players)


def prepare(info) -> None:
    """Learn the generic grid of a game that is not built in (``descent.web.grid.layout``: a few
    random games), once, ahead of its first view."""
    if generic.is_generic(info):
        generic.layout(info)


def sides(info) -> list[str]:
    """The seats of the game ``info`` as the page names them (``side_names``); a game drawn on the
    generic grid by its players' names with the colour of their pieces on the page and the
    character of the drawing ("first (black, b)"), since its names need not say it."""
    if not generic.is_generic(info):
        return side_names(info.players)
    lay = generic.layout(info)
    out = []
    for seat, (name, colour) in enumerate(zip(info.players, COLOURS)):
        mark = lay.main.get(seat)
        out.append(f"{name} ({colour}, {mark})" if mark and lay.parsed else f"{name} ({colour})")
    return out


def piece_count(game: str, drawn: dict) -> list[int] | None:
    """The pieces of each seat on a drawn board (``view``), for the games of ``COUNTED``; else None."""
    if game not in COUNTED:
        return None
    counts = [0, 0]
    for cell in drawn["cells"]:
        if cell["owner"] in (0, 1):
            counts[cell["owner"]] += 1
    return counts


def _grid_from_drawing(text: str) -> list[list[str | None]]:
    """The rows of a drawing whose board lines are ``N c c c ... N`` (draughts)."""
    rows = []
    for line in text.splitlines():
        m = re.fullmatch(r"\s*([0-9]+) (.*) \1\s*", line)
        if m:
            rows.append([None if ch == "." else ch for ch in m.group(2).split(" ")])
    return rows


def view(state) -> dict:
    """The drawable board of ``state``: ``shape``, ``width``/``height`` (in cell units),
    ``cells`` (``name``, ``x``, ``y``, ``piece``, ``owner``, ``dark``) and ``lines`` (pairs of cell
    names, for point boards)."""
    if generic.is_generic(state.game):
        return generic.view(state)
    game = state.game.name
    cells: list[dict] = []
    lines: list[list[str]] = []
    if game == "international_draughts":
        grid = _grid_from_drawing(str(state))
        h = len(grid)
        number = 0
        for r, row in enumerate(grid):
            for c, piece in enumerate(row):
                dark = (r + c) % 2 == 1          # the playing squares, numbered in reading order
                if dark:
                    number += 1
                cells.append({"name": str(number) if dark else None, "x": c, "y": r, "piece": piece,
                              "owner": owner(game, piece), "dark": dark})
        return {"shape": "square", "width": h, "height": h, "cells": cells, "lines": lines}
    board = state.position().split()[0]
    grid = [_expand_row(row) for row in board.split("/")]
    h = len(grid)
    if game == "havannah":
        base = (h + 1) // 2
        for r, row in enumerate(grid):
            start = max(0, r - (base - 1))
            for i, piece in enumerate(row):
                q = start + i
                cells.append({"name": f"{LETTERS[q]}{r + 1}", "x": q - r / 2 + (base - 1) / 2,
                              "y": r * math.sqrt(3) / 2, "piece": piece, "owner": owner(game, piece),
                              "dark": False})
        return {"shape": "hex", "width": 2 * base - 1, "height": (h - 1) * math.sqrt(3) / 2 + 1,
                "cells": cells, "lines": lines}
    if game == "tsoro_yematatu":
        flat = [p for row in grid for p in row]
        for k, piece in enumerate(flat, start=1):
            x, y = TSORO_POINTS[str(k)]
            cells.append({"name": str(k), "x": x, "y": y, "piece": piece, "owner": owner(game, piece),
                          "dark": False})
        return {"shape": "points", "width": 5, "height": 3, "cells": cells,
                "lines": [list(e) for e in TSORO_LINES]}
    w = max(len(row) for row in grid)
    bottom = h - 1 if game == "xiangqi" else h         # xiangqi's rows are numbered 0 to 9
    for r, row in enumerate(grid):
        for c, piece in enumerate(row):
            cells.append({"name": f"{LETTERS[c]}{bottom - r}", "x": c, "y": r, "piece": piece,
                          "owner": owner(game, piece), "dark": False})
    if game in POINT_GAMES:
        # the lines of the drawings of games/tapatan.pyx and games/alquerque.pyx: every
        # orthogonal neighbour, and the diagonals through the points whose row + column is even
        name = {(cell["y"], cell["x"]): cell["name"] for cell in cells}
        for (r, c), a in name.items():
            for dr, dc in ((0, 1), (1, 0)) + (((1, 1), (1, -1)) if (r + c) % 2 == 0 else ()):
                b = name.get((r + dr, c + dc))
                if b:
                    lines.append([a, b])
        return {"shape": "points", "width": w, "height": h, "cells": cells, "lines": lines}
    return {"shape": "square", "width": w, "height": h, "cells": cells, "lines": lines,
            "river": game == "xiangqi"}


def squares(game: str, text: str, names: set[str]) -> list[str]:
    """The cells a move's text names, in order (``[]`` for a move naming none, such as ``pass``)."""
    pattern = _NUMBER_SQUARE if game in NUMBERED else _LETTER_SQUARE
    found = pattern.findall(text.lower())
    return found if found and all(s in names for s in found) else []


def move_squares(state, text: str, names: set[str]) -> list[str]:
    """The cells of the move ``text``, legal in ``state`` (a hint), as the page marks them."""
    if generic.is_generic(state.game):
        return generic.squares(state, state.parse_move(text), text)
    return squares(state.game.name, text, names)


def last_squares(state, text: str, names: set[str]) -> list[str]:
    """The cells of the last move played, ``text``, as the page marks them."""
    if generic.is_generic(state.game):
        return generic.last_squares(state)
    return squares(state.game.name, text, names)


def moves(state, names: set[str] | None = None) -> list[dict]:
    """The legal moves as ``{"text", "squares"}`` (see ``squares``), in the engine's order; on the
    generic grid also ``area`` (``descent.web.grid.moves``)."""
    if generic.is_generic(state.game):
        return generic.moves(state)
    if names is None:
        names = {c["name"] for c in view(state)["cells"] if c["name"]}
    out = []
    for a in state.legal_actions_list():
        text = state.move_to_str(a)
        out.append({"text": text, "squares": squares(state.game.name, text, names)})
    return out
