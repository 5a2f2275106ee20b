"""The board the page draws for a game that is not built in (a plugin, ``module:Class``, an OpenSpiel
game): a grid read from the game's facts and text alone, learnt once per game (``layout``).

**The grid.** ``planes_shape`` gives its size, H x W; the drawing ``str(state)`` gives its pieces:
the block of consecutive lines of the same number of cells (characters, or single-character words
apart), a row label (digits) at either end of a line, a line of consecutive letters (``a b c``) as
column labels, a FEN-like line (``rnbqkbnr/pppppppp/8/...``) as rows too. A block of H x W cells,
or of another shape with as many cells (OpenSpiel's gomoku: planes 1 x 225, drawn 15 x 15), is the
board; ``.``, ``-``, ``_`` and ``·`` are empty cells, any other character a piece. Whose piece a
character is, is learnt by playing the first legal moves from the initial position: the cells a move
fills hold the mover's pieces (x is the first player's and o the second's where no move said),
learnt from the first legal moves and a few seeded random games.

**The cells' names**: the drawing's labels (column letter, row label: ``a5``), else the moves' own
texts where each action is a cell (below), else a column letter and a row number from the bottom.

**How a click becomes a move** (``mode``), the first that holds, each checked on the first legal
move from the initial position (its cells must be cells the move changes):

* ``text``: the moves' texts name cells (``a5a4``, ``d3``): one cell a placement, several a piece
  moving from the first to the last, as for the built-in games;
* ``cells``: the game has one action per cell (``num_actions`` = H x W, or one more: a pass), action
  ``a`` the cell of row ``a // W``, column ``a % W`` from the top left (tic-tac-toe, hex, amazons);
* ``columns``: one action per column (``num_actions`` = W, or one more): a click anywhere in a
  column drops there (Connect Four), the cell it lands on marked;
* ``list``: the geometry is unknown: the page lists the legal moves' texts to pick from.

A move no click gives (a pass, a move naming no cell) is a button on every board.
"""
from __future__ import annotations

import random
import re
from dataclasses import dataclass, field

from games.boardtext import LETTERS

EMPTY = frozenset(".-_·")
_LETTER_SQUARE = re.compile(r"[a-z][0-9]{1,2}")
_FEN = re.compile(r"^[A-Za-z0-9]+(?:/[A-Za-z0-9]+)+$")
_OWNER_PLIES = 8        # first legal moves played to learn whose pieces are whose,
_OWNER_GAMES = 4        # then random games
_OWNER_GAME_PLIES = 200
_CACHE_SIZE = 64


@dataclass
class Layout:
    """What ``layout`` learnt of a game: the grid's size, the cells' names (row 0 at the top), how a
    click becomes a move, and whose each piece character is."""

    rows: int
    cols: int
    names: list[list[str]]
    mode: str                                   # text, cells, columns or list
    parsed: bool                                # the drawing shows the grid (pieces are drawn)
    owners: dict[str, int] = field(default_factory=dict)
    main: dict[int, str] = field(default_factory=dict)    # each seat's first piece character

    def name_set(self) -> set[str]:
        return {n for row in self.names for n in row}


_LAYOUTS: dict[str, Layout] = {}


def is_generic(info) -> bool:
    """Whether the game of ``info`` (a ``GameInfo``) is drawn by this module: not a built-in game."""
    from games import registry  # lazy: keeps this module importable alone (no engine loaded)
    return info.name not in registry.names()


def _split(line: str, width: int | None = None) -> tuple[str | None, list[str]] | None:
    """A drawing line as (row label or None, cells), or None when it holds no row of cells; of the
    readings with a row label of 2, 1 or no digits, the one of ``width`` cells where there is one
    (a row ``78...+...`` is row 7 of 8 cells, the first a piece 8)."""
    text = line.rstrip()
    if not text.strip():
        return None
    readings = []
    for digits in (2, 1, 0):
        label, body = None, text.strip()
        if digits:
            m = re.fullmatch(r"\s*([0-9]{" + str(digits) + r"})(\S.*?|\s+\S.*?)(?:\s*\b\1)?\s*", text)
            if not (m and m.group(2).strip()):
                continue
            label, body = m.group(1), m.group(2).strip()
        words = body.split()
        if len(words) > 1 and all(len(w) == 1 for w in words):
            readings.append((label, words))
        elif len(words) == 1:
            readings.append((label, list(words[0])))
    if not readings:
        return None
    return next((r for r in readings if len(r[1]) == width), readings[0])


def _column_labels(cells: list[str]) -> bool:
    return len(cells) > 1 and all(c == LETTERS[i] for i, c in enumerate(cells))


def _fen_rows(line: str) -> list[list[str]] | None:
    word = line.strip().split(" ")[0] if line.strip() else ""
    if not _FEN.fullmatch(word):
        return None
    rows = []
    for part in word.split("/"):
        row: list[str] = []
        for run, ch in re.findall(r"([0-9]+)|(.)", part):
            row.extend(["."] * int(run) if run else [ch])
        rows.append(row)
    return rows if len({len(r) for r in rows}) == 1 else None


def parse(drawing: str, rows: int, cols: int) -> tuple[list[list[str]], list[str] | None, list[str] | None] | None:
    """The board in a drawing: (cells by row from the top, row labels, column labels), the block of
    ``rows`` x ``cols`` cells, else of another shape with ``rows * cols`` cells; None when none."""
    lines = drawing.splitlines()
    for line in lines:
        fen = _fen_rows(line)
        if fen and len(fen) * len(fen[0]) == rows * cols:
            return fen, None, None
    for width in (cols, None):
        found = _block(lines, rows, cols, width)
        if found is not None:
            return found
    return None


def _block(lines: list[str], rows: int, cols: int, width: int | None):
    parsed = [_split(ln, width) for ln in lines]
    widths = [len(p[1]) if p is not None and not _column_labels(p[1]) else 0 for p in parsed]
    blocks: list[tuple[int, int, int]] = []     # (first line, past the last, width) of equal-width runs
    i = 0
    while i < len(parsed):
        if not widths[i]:
            i += 1
            continue
        j = i + 1
        while j < len(parsed) and widths[j] == widths[i]:
            j += 1
        blocks.append((i, j, widths[i]))
        i = j
    fits = [b for b in blocks if b[1] - b[0] == rows and b[2] == cols] or \
           [b for b in blocks if (b[1] - b[0]) * b[2] == rows * cols and b[1] - b[0] > 1]
    if len(fits) != 1:
        return None
    first, past, _ = fits[0]
    block = [p for p in parsed[first:past] if p is not None]
    grid = [cells for _, cells in block]
    labels = [label for label, _ in block]
    row_labels = [x for x in labels if x] if all(labels) and len(set(labels)) == len(labels) else None
    col_labels = None
    for k in (first - 1, past):
        near = parsed[k] if 0 <= k < len(parsed) else None
        if near is not None and _column_labels(near[1]) and len(near[1]) == len(grid[0]):
            col_labels = near[1]
    return grid, row_labels, col_labels


def _grid(state, layout: Layout) -> list[list[str]] | None:
    found = parse(str(state), layout.rows, layout.cols)
    if found is None or len(found[0]) != layout.rows or len(found[0][0]) != layout.cols:
        return None
    return found[0]


def _changed(before: list[list[str]] | None, after: list[list[str]] | None) -> list[tuple[int, int]]:
    if before is None or after is None:
        return []
    return [(r, c) for r, row in enumerate(before) for c, v in enumerate(row) if after[r][c] != v]


def _after(state, action: int):
    s = state.copy()
    s.push(action)
    return s


def _text_squares(text: str, names: set[str]) -> list[str]:
    found = _LETTER_SQUARE.findall(text.lower())
    return found if found and all(s in names for s in found) else []


def _learn(info) -> Layout:
    h, w = info.planes_shape[0], info.planes_shape[1]
    s0 = info.new_state()
    found = parse(str(s0), h, w)
    if found is not None:
        grid0, row_labels, col_labels = found
        h, w = len(grid0), len(grid0[0])
    else:
        grid0, row_labels, col_labels = None, None, None
    n = info.num_actions
    texts: dict[int, str] = {}

    def text(a: int) -> str:
        if a not in texts:
            texts[a] = s0.move_to_str(a)
        return texts[a]

    candidates: list[list[list[str]]] = []
    if row_labels and col_labels:
        candidates.append([[f"{col_labels[c]}{row_labels[r]}" for c in range(w)] for r in range(h)])
    if n in (h * w, h * w + 1):
        by_action = [[text(r * w + c) for c in range(w)] for r in range(h)]
        if len({t for row in by_action for t in row}) == h * w:
            candidates.append(by_action)
    if w <= len(LETTERS):
        candidates.append([[f"{LETTERS[c]}{h - r}" for c in range(w)] for r in range(h)])
        candidates.append([[f"{LETTERS[c]}{r + 1}" for c in range(w)] for r in range(h)])
    legal = s0.legal_actions_list()
    layout = Layout(h, w, candidates[0] if candidates else [[""] * w for _ in range(h)], "list",
                    grid0 is not None)
    if grid0 is not None and legal:
        for names in candidates:            # text: the first naming whose squares the move changes
            flat = {x for row in names for x in row}
            named = [(a, _text_squares(text(a), flat)) for a in legal]
            named = [(a, sq) for a, sq in named if sq]
            if not named:
                continue
            a, sq = named[0]
            where = {names[r][c] for r, c in _changed(grid0, _grid(_after(s0, a), layout))}
            if set(sq) <= where:
                layout.names, layout.mode = names, "text"
                break
        if layout.mode == "list" and n in (h * w, h * w + 1):
            a = next((x for x in legal if x < h * w), None)
            if a is not None:
                moved = _changed(grid0, _grid(_after(s0, a), layout))
                if not moved or (a // w, a % w) in moved:
                    layout.mode = "cells"
        if layout.mode == "list" and n in (w, w + 1):
            a = legal[0]
            moved = _changed(grid0, _grid(_after(s0, a), layout))
            if moved and a < w and all(c == a for _, c in moved):
                layout.mode = "columns"
    if grid0 is not None:
        _learn_owners(s0, layout, grid0)
    return layout


def _learn_owners(s0, layout: Layout, grid0: list[list[str]]) -> None:
    """Whose piece each character is: the cells a move fills hold the mover's. Learnt from the
    first legal moves, then from a few random games (seeded: the same every time), which reach the
    pieces a game makes later (a crowned king)."""
    rng = random.Random(0)
    for game in range(1 + _OWNER_GAMES):
        s = s0.copy()
        before: list[list[str]] | None = grid0
        for _ in range(_OWNER_PLIES if game == 0 else _OWNER_GAME_PLIES):
            legal = s.legal_actions_list()
            if not legal or s.is_game_over():
                break
            mover = s.to_move
            s.push(legal[0] if game == 0 else rng.choice(legal))
            after = _grid(s, layout)
            for r, c in _changed(before, after):
                assert after is not None
                ch = after[r][c]
                if ch not in EMPTY and ch not in layout.owners:
                    layout.owners[ch] = mover
                    layout.main.setdefault(mover, ch)
            before = after
    if not layout.owners:
        layout.main = {0: "x", 1: "o"}


def owner(layout: Layout, ch: str) -> int | None:
    """The seat whose piece the character ``ch`` is (None: not known): as learnt, else by its case
    where each case was one seat's, else as the other case of the letter, else x first and o second."""
    known = layout.owners
    if ch in known:
        return known[ch]
    upper = {s for c, s in known.items() if c.isalpha() and c.isupper()}
    lower = {s for c, s in known.items() if c.isalpha() and c.islower()}
    if ch.isalpha() and len(upper) == 1 and len(lower) == 1 and upper != lower:
        return next(iter(upper if ch.isupper() else lower))
    if ch.swapcase() in known:
        return known[ch.swapcase()]
    return {"x": 0, "o": 1}.get(ch.lower()) if set(known.values()) != {0, 1} else None


def layout(info) -> Layout:
    """The layout of the game ``info`` (``GameInfo``), learnt once and kept."""
    found = _LAYOUTS.get(info.spec)
    if found is None:
        if len(_LAYOUTS) >= _CACHE_SIZE:
            _LAYOUTS.pop(next(iter(_LAYOUTS)))
        found = _LAYOUTS[info.spec] = _learn(info)
    return found


def view(state) -> dict:
    """The drawable board of ``state`` (the shape of ``descent.web.board.view``): a plain square
    grid; each cell's ``glyph`` is its piece's character where the colour alone does not say it."""
    lay = layout(state.game)
    grid = _grid(state, lay) if lay.parsed else None
    cells = []
    for r in range(lay.rows):
        for c in range(lay.cols):
            ch = grid[r][c] if grid is not None else "."
            piece = None if ch in EMPTY else ch
            seat = owner(lay, piece) if piece else None
            glyph = piece if piece and (seat is None or lay.main.get(seat) != piece) else None
            cells.append({"name": lay.names[r][c] or None, "x": c, "y": r, "piece": piece, "owner": seat,
                          "dark": False, "glyph": glyph})
    return {"shape": "square", "width": lay.cols, "height": lay.rows, "cells": cells, "lines": [],
            "generic": True, "mode": lay.mode, "drawn": grid is not None}


def _landing(state, action: int, lay: Layout) -> list[str]:
    """The cells that playing ``action`` fills (a dropped stone's cell)."""
    before = _grid(state, lay)
    after = _grid(_after(state, action), lay)
    return [lay.names[r][c] for r, c in _changed(before, after) if after and after[r][c] not in EMPTY]


def squares(state, action: int, text: str | None = None) -> list[str]:
    """The cells the move ``action`` (legal in ``state``) names or lands on, as the page marks them."""
    lay = layout(state.game)
    if text is None:
        text = state.move_to_str(action)
    if lay.mode == "text":
        return _text_squares(text, lay.name_set())
    if lay.mode == "cells" and action < lay.rows * lay.cols:
        return [lay.names[action // lay.cols][action % lay.cols]]
    if lay.mode == "columns" and action < lay.cols:
        return _landing(state, action, lay)[:1]
    return []


def last_squares(state) -> list[str]:
    """The cells of the last move played (``[]`` at the start)."""
    if not state.move_stack:
        return []
    before = state.copy()
    action = before.pop()
    return squares(before, action)


def moves(state) -> list[dict]:
    """The legal moves as ``{"text", "squares"}`` (``squares``), with ``area`` in the columns mode:
    the cells a click on which plays the move (its whole column)."""
    lay = layout(state.game)
    out = []
    for a in state.legal_actions_list():
        text = state.move_to_str(a)
        m = {"text": text, "squares": squares(state, a, text)}
        if lay.mode == "columns" and a < lay.cols:
            m["area"] = [lay.names[r][a] for r in range(lay.rows)]
        out.append(m)
    return out
