"""Five Field Kono (Korea, o-pat-ko-no; LoBoGames, seed 003): race to the opponent's start points.

Board: the 5x5 points ``a1`` (bottom-left) .. ``e5``; internally point ``r * 5 + c`` with row 0 at the
*top*. ``x`` (player 0, moves first) starts on its home row a1-e1 and on a2 and e2; ``o`` on a5-e5, a4
and e4 (7 pieces each; text ``ooooo/o3o/5/x3x/xxxxx x 0``).

Rules (docs/GAMES.md). A move takes one piece one step diagonally, forward or backward, to an empty
point; nothing is captured and nothing is jumped. A player wins when its move leaves **all seven** of
the opponent's starting points occupied by its own pieces. Diagonal steps keep a piece on points of
one colour (r + c even or odd), and each side's 7 start points hold 3 even and 4 odd points, so
winning needs every piece of the winner in the opponent's camp. A start point that the opponent never
leaves is therefore never occupied by the winner's pieces and blocks that win: **our reading** of the
rule ("occupy all seven with your own pieces") keeps it so, with no special rule for blocked points; such
a game ends by the no-move rule, repetition or the ply cap. A player with no legal move on its turn
loses. The third occurrence of the same position (board and side to move) since the root (the start, or
the position last set from text) is a draw, and the ply cap (200) is a draw. Precedence after a move:
the occupation win, then the opponent's having no move, then repetition, then the cap. Terminal
evaluation: additive depth over the cap.

Actions: the 64 directed diagonal steps sorted by (from point, to point). Notation: ``a1-b2`` (or
``a1b2``).

Position text: ``BOARD SIDE PLY`` with the rows top to bottom, FEN-like (``x``, ``o``, ``.`` or digit
runs). Parsing requires 7 pieces each (there are no captures), ``x`` to move at even plies and ``o`` at
odd plies, and not both players on all their goal points; a player on all its goal points has won; the
ply may be omitted (then 0 or 1, by the side to move). A position set from text has an empty history
(repetitions count from there).

Hash: board, side to move and **ply** (positions repeat and the text carries the ply; it also keeps the
search graph acyclic); a state drawn by repetition also xors a key of its own. The history key
(``history_key``; the searches use ``search_key = zobrist_hash ^ history_key``) is the multiset of the
positions since the root (every move is reversible, so each of them can recur).

Encoding: ``(5, 5, 2)`` planes [mover's pieces, opponent's pieces] from the mover's point of view: the
rows are flipped when ``o`` is to move (its start camp then lies at the bottom, like ``x``'s). The
left-right mirror (4) is the only symmetry.
"""
import re

from libc.stdlib cimport malloc, free
from libc.string cimport memcpy

from games._state cimport State, SCORE_ADDITIVE_DEPTH, RESULT_FIRST_WINS, RESULT_SECOND_WINS, RESULT_DRAW
from games._typedefs cimport action_t, hash_t, splitmix64, uint64_t, mix64

from games import boardtext as bt
from games.errors import GameError, InvalidMoveError, InvalidPositionError

cdef enum:
    KONO_ONGOING = 0
    KONO_OCCUPIED = 1
    KONO_NO_MOVE = 2
    KONO_REPETITION = 3
    KONO_CAP = 4

REASONS = {KONO_OCCUPIED: "occupation of the opponent's start", KONO_NO_MOVE: "no legal move",
           KONO_REPETITION: "threefold repetition", KONO_CAP: "ply cap"}
cdef enum:
    KONO_MAX_PLIES = 200
    KONO_NMOVES = 64

SYMBOLS = "xo"
MAX_PLIES = KONO_MAX_PLIES
START = "ooooo/o3o/5/x3x/xxxxx"

# Start points: x's (bottom row, a2, e2) and o's (top row, a4, e4); each side's goal is the other's start.
STARTS = ([20, 21, 22, 23, 24, 15, 19], [0, 1, 2, 3, 4, 5, 9])
MOVES = sorted((f, t) for f in range(25) for dr in (-1, 1) for dc in (-1, 1)
               for t in [(f // 5 + dr) * 5 + f % 5 + dc]
               if 0 <= f // 5 + dr < 5 and 0 <= f % 5 + dc < 5)
MOVE_ID = {m: k for k, m in enumerate(MOVES)}
NMOVES = len(MOVES)
assert NMOVES == KONO_NMOVES

cdef int MFROM[64]
cdef int MTO[64]
cdef signed char GOAL[2][25]     # GOAL[p][q]: point q is one of p's goal points
cdef hash_t ZOB[25][2]
cdef hash_t ZSIDE, ZREP
cdef hash_t ZPLY[KONO_MAX_PLIES + 1]


cdef void _init_tables():
    global ZSIDE, ZREP
    cdef uint64_t seed = 0x5F1E1DC0
    cdef int i
    for i in range(25):
        ZOB[i][0] = splitmix64(&seed)
        ZOB[i][1] = splitmix64(&seed)
    ZSIDE = splitmix64(&seed)
    ZREP = splitmix64(&seed)
    for i in range(KONO_MAX_PLIES + 1):
        ZPLY[i] = splitmix64(&seed)


_init_tables()
for _k, (_f, _t) in enumerate(MOVES):
    MFROM[_k] = _f
    MTO[_k] = _t
for _p in range(2):
    for _q in range(25):
        GOAL[_p][_q] = _q in STARTS[1 - _p]

_MOVE = re.compile(r"^([a-z]\d{1,2})\s*-?\s*([a-z]\d{1,2})$")


def facts(params: dict) -> dict:
    return dict(players=("x", "o"), num_actions=NMOVES, max_plies=MAX_PLIES, planes_shape=(5, 5, 2),
                symmetries=(0, 4), score_kind=SCORE_ADDITIVE_DEPTH, extra={"history_dependent": True})


def _name(p):
    return bt.square_name(p // 5, p % 5, 5)


cdef class FiveFieldKonoState(State):
    def __cinit__(self):
        self.keys = NULL

    def __init__(self, info):
        self._init_base(info)
        self.keys = <hash_t*>malloc(sizeof(hash_t) * (self.max_plies + 1))
        if self.keys == NULL:
            raise MemoryError()
        cdef int i
        flat = [v for row in bt.parse_board(START, 5, 5, SYMBOLS, "five_field_kono") for v in row]
        for i in range(25):
            self.board[i] = flat[i]
        self.reason = KONO_ONGOING
        self._rebuild()

    def __dealloc__(self):
        if self.keys != NULL:
            free(self.keys)
            self.keys = NULL

    cdef void _rebuild(self) noexcept:
        """Derive the goal counts, the repetition key, the hash and a new root of the key stack."""
        cdef int i, v
        cdef hash_t k = 0
        self.athome[0] = self.athome[1] = 0
        for i in range(25):
            v = self.board[i]
            if v >= 0:
                k ^= ZOB[i][v]
                self.athome[v] += GOAL[v][i]
        if self._player:
            k ^= ZSIDE
        self.key = k
        self.keys[0] = k
        self.nkeys = 1
        self._hash = k ^ ZPLY[self._ply]
        self._hist_key = mix64(k)
        if self.reason == KONO_REPETITION:
            self._hash ^= ZREP

    # ---- hooks ----------------------------------------------------------------------------------
    cdef int legal_actions(self, action_t* out) noexcept nogil:
        if self._terminal:
            return 0
        cdef signed char p = <signed char>self._player
        cdef int k, n = 0
        for k in range(KONO_NMOVES):
            if self.board[MFROM[k]] == p and self.board[MTO[k]] < 0:
                out[n] = k
                n += 1
        return n

    cdef bint _has_move(self, int p) noexcept nogil:
        cdef int k
        for k in range(KONO_NMOVES):
            if self.board[MFROM[k]] == p and self.board[MTO[k]] < 0:
                return True
        return False

    cdef void _do_apply(self, action_t a) noexcept nogil:
        cdef int p = self._player
        cdef int f = MFROM[a]
        cdef int t = MTO[a]
        cdef int j, reps
        self.board[f] = -1
        self.board[t] = <signed char>p
        self.athome[p] += GOAL[p][t] - GOAL[p][f]
        self.key ^= ZOB[f][p] ^ ZOB[t][p] ^ ZSIDE
        self.keys[self.nkeys] = self.key
        self.nkeys += 1
        self._player = 1 - p
        self._hash = self.key ^ ZPLY[self._ply]
        self._hist_key = self._hist_key + mix64(self.key)   # every move is reversible
        if self.athome[p] == 7:
            self._terminal = True
            self._result = RESULT_FIRST_WINS if p == 0 else RESULT_SECOND_WINS
            self.reason = KONO_OCCUPIED
            return
        if not self._has_move(1 - p):
            self._terminal = True
            self._result = RESULT_FIRST_WINS if p == 0 else RESULT_SECOND_WINS
            self.reason = KONO_NO_MOVE
            return
        reps = 1
        j = self.nkeys - 3
        while j >= 0:
            if self.keys[j] == self.key:
                reps += 1
            j -= 2
        if reps >= 3:
            self._terminal = True
            self._result = RESULT_DRAW
            self.reason = KONO_REPETITION
            self._hash ^= ZREP
        elif self._ply >= self.max_plies:
            self._terminal = True
            self._result = RESULT_DRAW
            self.reason = KONO_CAP

    cdef void _do_undo(self, action_t a) noexcept nogil:
        cdef int p = self._player              # the mover of `a`
        cdef int f = MFROM[a]
        cdef int t = MTO[a]
        self.board[t] = -1
        self.board[f] = <signed char>p
        self.athome[p] -= GOAL[p][t] - GOAL[p][f]
        self.nkeys -= 1
        self.key = self.keys[self.nkeys - 1]
        self.reason = KONO_ONGOING

    cdef void encode(self, float* out) noexcept nogil:
        cdef int r, c, er, v, i
        cdef int p = self._player
        for r in range(5):
            er = r if p == 0 else 4 - r
            for c in range(5):
                v = self.board[r * 5 + c]
                i = 2 * (er * 5 + c)
                out[i] = 1.0 if v == p else 0.0
                out[i + 1] = 1.0 if (v >= 0 and v != p) else 0.0

    cdef void _copy_to(self, State dst) noexcept:
        cdef FiveFieldKonoState d = <FiveFieldKonoState>dst
        d.board = self.board
        d.athome = self.athome
        d.reason = self.reason
        d.key = self.key
        memcpy(d.keys, self.keys, sizeof(hash_t) * self.nkeys)
        d.nkeys = self.nkeys

    # ---- text ---------------------------------------------------------------------------------------
    def _grid(self):
        return [[self.board[r * 5 + c] for c in range(5)] for r in range(5)]

    def _parse_move_text(self, str text) -> int:
        m = _MOVE.match(text.lower())
        if not m:
            raise InvalidMoveError(
                f"five_field_kono: malformed move {text!r} (expected from and to points, e.g. 'a1-b2')")
        try:
            fr, fc = bt.parse_square(m.group(1), 5, 5, "from-point")
            tr, tc = bt.parse_square(m.group(2), 5, 5, "to-point")
        except InvalidMoveError as err:
            raise InvalidMoveError(f"five_field_kono: move {text!r}: {err}") from None
        key = (fr * 5 + fc, tr * 5 + tc)
        if key not in MOVE_ID:
            raise InvalidMoveError(
                f"five_field_kono: {text!r} is not a diagonal step to an adjacent point")
        return MOVE_ID[key]

    def _move_text(self, int action) -> str:
        f, t = MOVES[action]
        return f"{_name(f)}-{_name(t)}"

    def _position_text(self) -> str:
        return f"{bt.format_board(self._grid(), SYMBOLS)} {SYMBOLS[self._player]} {self._ply}"

    def _set_position_text(self, str text) -> None:
        name = self.game.spec
        board, side, ply = bt.split_position(text, name, SYMBOLS)
        grid = bt.parse_board(board, 5, 5, SYMBOLS, name)
        flat = [v for row in grid for v in row]
        nx, no = flat.count(0), flat.count(1)
        if nx != 7 or no != 7:
            raise InvalidPositionError(
                f"{name}: position {text!r} has {nx} x and {no} o (7 each: there are no captures)")
        if ply is None:
            ply = side
        if ply % 2 != side:
            raise InvalidPositionError(
                f"{name}: ply {ply} in {text!r} is impossible with {SYMBOLS[side]} to move "
                f"(x moves at even plies)")
        if ply > self.max_plies:
            raise InvalidPositionError(f"{name}: ply {ply} in {text!r} exceeds the ply cap {self.max_plies}")
        done = [all(flat[q] == p for q in STARTS[1 - p]) for p in (0, 1)]
        if all(done):
            raise InvalidPositionError(
                f"{name}: both players occupy all the other's start points in {text!r}")
        # Validation done: set the state.
        cdef int i
        for i in range(25):
            self.board[i] = flat[i]
        self._player = side
        self._ply = ply
        self._terminal, self._result, self.reason = False, RESULT_DRAW, KONO_ONGOING
        if done[0] or done[1]:
            self._terminal, self.reason = True, KONO_OCCUPIED
            self._result = RESULT_FIRST_WINS if done[0] else RESULT_SECOND_WINS
        elif not self._has_move(side):
            self._terminal, self.reason = True, KONO_NO_MOVE
            self._result = RESULT_SECOND_WINS if side == 0 else RESULT_FIRST_WINS
        elif ply >= self.max_plies:
            self._terminal, self.reason = True, KONO_CAP
        self._rebuild()

    def _termination_reason(self):
        return REASONS.get(self.reason) if self._terminal else None

    def _drawing(self) -> str:
        if self._terminal:
            footer = f"game over: {self.result()} ({REASONS[self.reason]}, ply {self._ply})"
        else:
            footer = f"{SYMBOLS[self._player]} to move (ply {self._ply})"
        return bt.draw_grid(self._grid(), SYMBOLS, 5, 5, footer)

    def _transform_action(self, int sym, int action) -> int:
        if not 0 <= action < self.num_actions:
            raise InvalidMoveError(f"action id {action} is out of range [0, {self.num_actions})")
        if sym == 0:
            return action
        if sym != 4:
            raise GameError(f"five_field_kono: symmetry {sym} is not a symmetry of the game (allowed: 0, 4)")
        f, t = MOVES[action]
        return MOVE_ID[f - f % 5 + 4 - f % 5, t - t % 5 + 4 - t % 5]
