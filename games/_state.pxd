# The game interface the search is written against.
#
# Every engine is a subclass of `State` that overrides the `cdef` hooks below. Calls go through
# Cython's vtable (one indirect C call, no Python), and every hook is `noexcept nogil`, so search,
# perft and playouts run without the GIL.
#
# Who does what when a move is played and taken back (the shape of OpenSpiel's
# ApplyAction/DoApplyAction and pgx's step/_step):
# * The base class owns the bookkeeping: `apply(a)` records the move and the state's bookkeeping
#   (`_hash`, `_hist_key`, `_player`) in a `Frame`, counts the ply (`_ply += 1`) and calls the
#   game's `_do_apply(a)`; `undo()` restores `_hash`, `_hist_key`, `_player` and `_ply`, clears
#   `_terminal` and `_result` (a move is only ever played in a position that is not over), and
#   then calls the game's `_do_undo(a)`.
# * The game implements only its rules: `_do_apply` changes the board, names the next player to
#   move, updates the hash (and the history key in a game whose outcome depends on the history)
#   and decides whether the game is over and how; `_do_undo` takes back the board (and the game's
#   own extra fields, such as a termination reason code). It never touches `_ply`, `_player`,
#   `_hash`, `_hist_key`, `_terminal` or `_result`: they are already those of before the move.
from games._typedefs cimport action_t, hash_t, uint64_t

# Values of `State._result` (binary outcome b_t from the first player's point of view).
cdef enum:
    RESULT_FIRST_WINS = 1
    RESULT_DRAW = 0
    RESULT_SECOND_WINS = -1

# Kinds of terminal evaluation f_t (docs/ALGORITHMS.md section 2).
cdef enum ScoreKind:
    SCORE_ADDITIVE_DEPTH = 0
    SCORE_MULTIPLICATIVE_DEPTH = 1
    SCORE_NATURAL = 2          # the game's own margin (e.g. disc difference), via `natural_score`


# What `apply` saves and `undo` restores, one per move of the history.
ctypedef struct Frame:
    hash_t hash                 # `_hash` before the move
    hash_t hist_key             # `_hist_key` before the move
    int player                  # `_player` before the move: the mover


cdef class State:
    # --- read by everyone, written by the engine ---------------------------------------------
    cdef public object game         # the `GameInfo` record this state belongs to
    cdef int _player                # player to move: 0 or 1 (never inferred from parity)
    cdef int _ply                   # plies played since the game's start
    cdef bint _terminal
    cdef int _result                # RESULT_*; meaningful only when _terminal
    cdef hash_t _hash               # Zobrist hash, includes the side to move
    cdef hash_t _hist_key           # key of the repetition-relevant history (0 in games whose
                                    # outcome depends on the position alone); the searches key
                                    # their tables by `_hash ^ _hist_key` (see `search_key`)
    # --- static facts of the game instance --------------------------------------------------------
    cdef int num_actions            # size of the action space; legal action ids are in [0, num_actions)
    cdef int max_legal              # upper bound on the number of legal actions (buffer sizes)
    cdef int max_plies              # ply cap: reaching it ends the game in a draw
    cdef int planes_h, planes_w, planes_c   # encoding shape (channels last)
    cdef int score_kind             # ScoreKind
    # --- history owned by the base class ----------------------------------------------------------
    cdef action_t* _history
    cdef Frame* _frames             # the bookkeeping before each move of the history (for undo)
    cdef int _nhist
    cdef int _hist_cap

    # Hooks each game implements -----------------------------------------------------------------
    cdef int legal_actions(self, action_t* out) noexcept nogil
    # Write the legal actions (sorted ascending) to `out` (capacity `game.branching`, i.e. the
    # fact `max_legal`, or `num_actions` when the game gives none); return their
    # number. Zero exactly when the state is terminal.
    cdef int count_legal_actions(self, action_t* scratch) noexcept nogil
    # The number of legal actions (default: legal_actions into `scratch`); games where it is
    # cheaper to count than to list override it (perft's bulk counting uses it).
    cdef void _do_apply(self, action_t a) noexcept nogil
    # The rules of legal action `a` (called by `apply`, which has saved the bookkeeping and already
    # counted the ply: `_ply` includes `a`, `_player` is still the mover). Update the board, set
    # `_player` to the next player to move, update `_hash` (and `_hist_key` in a game whose outcome
    # depends on the history), and set `_terminal` and `_result` when the game is over.
    cdef void _do_undo(self, action_t a) noexcept nogil
    # Take back the board changes of `_do_apply(a)`, the last action played (called by `undo`,
    # which has already restored `_ply`, `_player` (the mover of `a`), `_hash`, `_hist_key`,
    # `_terminal` and `_result` to their values before `a`).
    cdef double natural_score(self) noexcept nogil
    # For SCORE_NATURAL games: the margin m in [-1, 1] of the first player (winner's margin > 0).
    cdef void encode(self, float* out) noexcept nogil
    # Write planes_h * planes_w * planes_c floats (H, W, C order) from the mover's point of view.
    cdef void _copy_to(self, State dst) noexcept
    # Copy the game-specific fields into `dst`, a state of the same game and parameters.

    # Provided by the base class ------------------------------------------------------------------
    cdef void apply(self, action_t a) noexcept nogil
    cdef action_t undo(self) noexcept nogil
    cdef bint is_legal_action(self, action_t a) noexcept nogil
    cdef double terminal_value(self) noexcept nogil
    cdef State clone(self)
    cdef int _alloc_history(self, int capacity) except -1
    cdef int _init_base(self, object info) except -1


cdef unsigned long long c_perft(State s, int depth, action_t* buf) noexcept nogil
cdef unsigned long long c_count_games(State s, action_t* buf) noexcept nogil
cdef int c_random_playout(State s, uint64_t* rng, action_t* buf) noexcept nogil
