"""What a newcomer meets first: moves typed as text wherever the API takes a move, the prompt's echo
of the person's move in every game, and a game without a network pointing at the sizes that ship."""
from __future__ import annotations

import random

import pytest

import games
from descent import play as play_mod
from descent import shipped
from descent.api import Opponent

NAMES = games.names()
# small or shipped sizes keep the random games short; every game is covered
SPECS = {name: name for name in NAMES}
SPECS.update({"reversi": "reversi(size=6)", "breakthrough": "breakthrough(rows=6,cols=6)",
              "havannah": "havannah(base=4)", "connect6": "connect6(size=9)",
              "outer_open_gomoku": "outer_open_gomoku(size=9)"})


def _random_walk(spec: str, plies: int, seed: int):
    """States along a random game (at most ``plies`` plies), each a copy."""
    rng = random.Random(seed)
    state = games.new_state(spec)
    out = [state.copy()]
    for _ in range(plies):
        if state.is_game_over():
            break
        state.push(rng.choice(state.legal_actions_list()))
        out.append(state.copy())
    return out


@pytest.mark.parametrize("name", NAMES)
def test_every_move_text_is_accepted_where_a_move_is(name):
    spec = SPECS[name]
    n_actions = games.load(spec).num_actions
    for state in _random_walk(spec, 12, seed=len(name)):
        if state.is_game_over():
            continue
        legal = state.legal_actions_list()
        for a in legal:
            text = state.move_to_str(a)
            assert state.is_legal(text), f"{spec}: is_legal({text!r}) is False at {state.position()!r}"
            assert text in state.legal_moves
            assert state.parse_move(text) == a
            s = state.copy()
            s.push(text)
            assert s.peek() == a
        # an action id that is not legal here, given as its text, is not legal
        illegal = next((a for a in range(n_actions) if a not in set(legal)), None)
        if illegal is not None:
            try:
                text = state.move_to_str(illegal)
            except games.GameError:
                text = None
            if text is not None and text not in {state.move_to_str(a) for a in legal}:
                assert not state.is_legal(text)
        for junk in ("", "   ", "zz99", "??", "a" * 200):
            assert state.is_legal(junk) is False


def test_opponent_push_takes_text_and_ids():
    bot = Opponent("reversi(size=6)", level="strongest", net=None, iterations=5)
    assert bot.state.is_legal("c5")
    action = bot.push("c5")
    assert bot.record() == ["c5"]
    bot.undo()
    assert bot.push(action) == action and bot.record() == ["c5"]


class _Script:
    """The person at the prompt: plays the first legal move for ``moves`` turns, then resigns."""

    def __init__(self, bot: Opponent, moves: int):
        self.bot, self.left, self.typed = bot, moves, []

    def __call__(self, prompt: str):
        if not prompt.startswith("Your move"):
            return ""                                  # the save question
        if self.left == 0:
            return "resign"
        self.left -= 1
        state = self.bot.state
        text = state.move_to_str(state.legal_actions_list()[0])
        self.typed.append(text)
        return text


@pytest.mark.parametrize("name", NAMES)
def test_the_prompt_echoes_the_move_as_typed_in_every_game(name, monkeypatch):
    spec = SPECS[name]
    bot = Opponent(spec, agent="random:seed=3", net=None)
    script = _Script(bot, 4)
    said = []
    monkeypatch.setattr(play_mod, "_ask", script)
    monkeypatch.setattr(play_mod.click, "echo", lambda text="", **_: said.append(str(text)))
    play_mod.play(spec, bot, 0, plain=True)
    echoed = [line.split(" play ", 1)[1][:-1] for line in said if line.startswith("You (") and " play " in line]
    assert script.typed, f"{spec}: the person never moved"
    assert echoed == script.typed, f"{spec}: typed {script.typed}, the prompt echoed {echoed}"


def _spec_ok(spec: str) -> bool:
    try:
        games.load(spec)
    except games.GameError:
        return False
    return True


def _unshipped_sizes() -> list[tuple[str, str]]:
    """(game name, a spec of it without a shipped network) for every game that ships a network at
    some size and has other sizes."""
    out = []
    for name in sorted({card["game"].split("(")[0] for _, card in shipped.entries()}):
        specs = shipped.specs_for(name)
        other = next((s for s in (name, f"{name}(size=5)", f"{name}(base=5)", f"{name}(rows=5,cols=5)")
                      if _spec_ok(s) and games.load(s).spec not in specs), None)
        if other is not None:
            out.append((name, other))
    return out


@pytest.mark.parametrize("name,unshipped", _unshipped_sizes())
def test_a_size_without_a_network_names_the_shipped_sizes(name, unshipped, monkeypatch, tmp_path):
    specs = shipped.specs_for(name)
    assert specs and all(s.split("(")[0] == name for s in specs)
    bot = Opponent(unshipped, level="strongest", net="best", iterations=2, root=tmp_path)
    assert bot.network is None
    said = []
    monkeypatch.setattr(play_mod, "_ask", lambda prompt: "resign" if prompt.startswith("Your") else "")
    monkeypatch.setattr(play_mod.click, "echo", lambda text="", **_: said.append(str(text)))
    play_mod.play(bot.info.spec, bot, 0, plain=True)
    note = next(line for line in said if line.startswith("No trained network found"))
    for s in specs:
        assert f"'{s}'" in note


def test_the_shipped_sizes_are_named_for_breakthrough_and_havannah():
    assert {n for n, _ in _unshipped_sizes()} >= {"breakthrough", "havannah", "reversi"}


def test_the_readme_table_of_shipped_networks_is_the_cards():
    from pathlib import Path
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    start = readme.index("<!-- shipped-table")
    block = readme[readme.index("\n", start) + 1:readme.index("<!-- /shipped-table -->")].strip()
    assert block == shipped.markdown_table(), (
        "README.md's table of shipped networks differs from the model cards: paste the output of "
        "`python -c 'from descent.shipped import markdown_table; print(markdown_table())'`")
