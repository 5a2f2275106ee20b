"""The base class's share of a move: `State.apply`/`undo` (push/pop) save and restore the bookkeeping
(ply, player to move, hash, history key, terminal flag and result) for every game, whatever the
game's `_do_apply`/`_do_undo` do; the conformance suite checks the positions and legal moves."""
from __future__ import annotations

import random

import pytest

import games
from conftest import GAME_SPECS

N_GAMES = 4


def bookkeeping(s) -> tuple:
    return (s.ply, s.to_move, s.zobrist_hash, s.history_key, s.search_key, s.is_game_over(),
            s.result(), s.outcome(), tuple(s.move_stack))


@pytest.mark.parametrize("spec", GAME_SPECS)
def test_pop_restores_the_bookkeeping_of_before_the_move(spec):
    for g in range(N_GAMES):
        rng = random.Random(1000 + g)
        s = games.new_state(spec)
        trail = []
        while not s.is_game_over():
            trail.append(bookkeeping(s))
            s.push(rng.choice(s.legal_actions_list()))
            assert s.ply == trail[-1][0] + 1 and len(s.move_stack) == len(trail)
        end = bookkeeping(s)
        copy = s.copy()                       # a copy carries the saved bookkeeping with it
        for before in reversed(trail):
            s.pop()
            copy.pop()
            assert bookkeeping(s) == before
            assert bookkeeping(copy) == before
        assert not s.is_game_over() and s.outcome() is None
        # and forward again: the same moves give the same bookkeeping at the end
        for a in end[-1]:
            s.push(a)
        assert bookkeeping(s) == end
