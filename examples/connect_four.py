"""Connect Four written in Python against descent's game protocol (``games.protocol``).

Seven columns of six rows (``columns``/``rows`` parameters); a stone drops to the lowest empty cell
of its column; four in a row (across, up or diagonally) wins; a full board draws. Actions: the
column, 0 .. columns-1; notation: the column letter ``a`` .. ``g``. Planes: rows x columns x 2, row
0 at the top, channel 0 the mover's stones, channel 1 the opponent's. Symmetry: the mirror of the
columns (``games.symmetry`` id 4).

Try it (from the repository root)::

    descent check-game examples.connect_four:ConnectFour
    descent match examples.connect_four:ConnectFour --first minimax:iterations=200 \\
        --second mcts:iterations=200 --games 2
    descent play 'examples.connect_four:ConnectFour(rows=5)'
"""
from __future__ import annotations

import numpy as np

from games.protocol import Game

DIRECTIONS = ((0, 1), (1, 0), (1, 1), (1, -1))


class ConnectFour(Game):
    """Connect Four: drop stones into columns; four in a row wins; a full board draws."""

    params = {"rows": (6, "board rows, 4..16"), "columns": (7, "board columns, 4..16")}
    players = ("red", "yellow")
    symmetries = (0, 4)
    terminal_evaluation = "additive"

    def __init__(self, rows: int = 6, columns: int = 7):
        if not (4 <= rows <= 16 and 4 <= columns <= 16):
            raise ValueError(f"rows and columns must be in [4, 16], got {rows}x{columns}")
        self.rows, self.columns = rows, columns
        self.num_actions = self.max_legal = columns
        self.max_plies = rows * columns
        self.planes_shape = (rows, columns, 2)
        self.board = [[-1] * columns for _ in range(rows)]    # board[row][col], row 0 at the bottom
        self.heights = [0] * columns
        self.player = 0
        self.plies = 0
        self.winner = -1

    # ---- rules ------------------------------------------------------------------------------------
    def to_move(self) -> int:
        return self.player

    def legal_actions(self) -> list[int]:
        if self.is_terminal():
            return []
        return [c for c in range(self.columns) if self.heights[c] < self.rows]

    def apply(self, action: int) -> None:
        r = self.heights[action]
        self.board[r][action] = self.player
        self.heights[action] += 1
        self.plies += 1
        if self._four(r, action):
            self.winner = self.player
        self.player = 1 - self.player

    def undo(self, action: int) -> None:
        self.heights[action] -= 1
        self.board[self.heights[action]][action] = -1
        self.plies -= 1
        self.winner = -1            # a move is only ever played in a position that is not over
        self.player = 1 - self.player

    def _four(self, r: int, c: int) -> bool:
        p = self.board[r][c]
        for dr, dc in DIRECTIONS:
            n = 1
            for sign in (1, -1):
                rr, cc = r + sign * dr, c + sign * dc
                while 0 <= rr < self.rows and 0 <= cc < self.columns and self.board[rr][cc] == p:
                    n += 1
                    rr, cc = rr + sign * dr, cc + sign * dc
            if n >= 4:
                return True
        return False

    def is_terminal(self) -> bool:
        return self.winner >= 0 or self.plies == self.rows * self.columns

    def result(self) -> int:
        return 0 if self.winner < 0 else (1 if self.winner == 0 else -1)

    def termination(self) -> str | None:
        return "four in a row" if self.winner >= 0 else "full board"

    # ---- what the search and the network see ----------------------------------------------------
    def key(self) -> tuple:
        return tuple(v for row in self.board for v in row)

    def encode(self) -> np.ndarray:
        b = np.array(self.board[::-1], dtype=np.int8)           # row 0 at the top
        return np.stack([b == self.player, b == 1 - self.player], axis=-1).astype(np.float32)

    def transform_action(self, sym: int, action: int) -> int:
        return self.columns - 1 - action if sym == 4 else action

    def copy(self) -> ConnectFour:
        c = object.__new__(type(self))
        c.__dict__.update(self.__dict__)
        c.board = [row[:] for row in self.board]
        c.heights = self.heights[:]
        return c

    # ---- text -------------------------------------------------------------------------------------
    def action_to_text(self, action: int) -> str:
        return "abcdefghijklmnop"[action]

    def text_to_action(self, text: str) -> int:
        t = text.strip().lower()
        letters = "abcdefghijklmnop"[: self.columns]
        if len(t) != 1 or t not in letters:
            raise ValueError(f"a move is a column letter a..{letters[-1]}")
        return letters.index(t)

    def __str__(self) -> str:
        rows = [" ".join(".xo"[v + 1] for v in row) for row in self.board[::-1]]
        return "\n".join(rows + [" ".join("abcdefghijklmnop"[: self.columns])])
