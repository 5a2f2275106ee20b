"""Interactive play through a pseudo-terminal, and the embedding API."""
import os
import re
import sys

import pytest

pexpect = pytest.importorskip("pexpect")

ENV = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), TF_CPP_MIN_LOG_LEVEL="3")


def spawn(*args):
    child = pexpect.spawn(sys.executable, ["-m", "descent", "play", *args], env=ENV, encoding="utf-8",
                          timeout=300)
    return child


def test_full_game_plain_mode(tmp_path):
    record = tmp_path / "game.txt"
    child = spawn("tic_tac_toe", "--plain", "--iterations", "300", "--net", "none", "--level", "strongest",
                  "--save", str(record))
    child.expect("you play x")
    child.expect("random playouts")
    moves = iter(["b2", "a1", "c1", "a3", "b1", "c2", "b3", "a2", "c3"])
    while True:
        i = child.expect([r"Your move \(x\): ", "Result: "])
        if i == 1:
            break
        # play the first legal of our scripted moves
        child.sendline("moves")
        child.expect(r"Legal moves: ([^\r\n]*)")
        legal = child.match.group(1).split(", ")
        child.expect(r"Your move \(x\): ")
        move = next(m for m in moves if m in legal)
        child.sendline(move)
    child.expect(r"Game record: ([^\r\n]*)")
    assert child.match.group(1).startswith("1.b2")
    child.expect(pexpect.EOF)
    out = child.before
    assert "\x1b[" not in out          # plain: no colour codes
    assert record.read_text().startswith('[Game "tic_tac_toe"]')


def test_illegal_move_rejected_and_undo_and_resign():
    child = spawn("tic_tac_toe", "--plain", "--iterations", "100", "--net", "none", "--seat", "second")
    child.expect(r"The computer \(x\) plays (\w+)\.")
    first = child.match.group(1)
    child.expect(r"Your move \(o\): ")
    child.sendline(first)                           # occupied: illegal
    child.expect("That move is not possible: illegal move")
    child.expect(r"Your move \(o\): ")
    child.sendline("q9")
    child.expect("That move is not possible: square 'q9'")
    child.expect(r"Your move \(o\): ")
    child.sendline("help")
    child.expect("hint")
    child.expect(r"Your move \(o\): ")
    free = next(m for m in ("b2", "a1", "c3") if m != first)
    child.sendline(free)
    child.expect(rf"You \(o\) play {free}\.")
    child.expect(r"The computer \(x\) plays (\w+)\.")
    child.expect(r"Your move \(o\): ")
    child.sendline("undo")
    child.expect(r"Took back 2 move\(s\)\.")
    child.expect(r"Your move \(o\): ")
    child.sendline("hint")
    child.expect(r"Hint: the computer suggests \w+\.")
    child.expect(r"Your move \(o\): ")
    child.sendline("resign")
    child.expect(r"x wins by resignation")
    child.expect(r"Game record: 1\." + first)
    child.expect(r"Save the record to a file \(empty: no\)\? ")
    child.sendline("")
    child.expect(pexpect.EOF)


def test_colour_mode_uses_colours():
    child = spawn("tic_tac_toe", "--iterations", "50", "--net", "none", "--seat", "second")
    child.expect(r"Your move \(o\): ")
    assert "\x1b[" in child.before
    child.sendline("resign")
    child.expect(r"Save the record to a file \(empty: no\)\? ")
    child.sendline("")
    child.expect(pexpect.EOF)


def test_api_example_from_the_readme():
    readme = open(os.path.join(os.path.dirname(__file__), "..", "README.md")).read()
    block = re.search(r"```python\n(from descent.api import Opponent.*?)```", readme, re.S)
    assert block, "the README's embedding example is missing"
    exec(compile(block.group(1), "README example", "exec"), {})


def test_api_levels_and_errors():
    from descent.api import Opponent, agent_spec
    from games.errors import GameError, IllegalMoveError
    bot = Opponent("tic_tac_toe", level="easy", net=None, iterations=100, seed=1)
    bot.push("b2")
    with pytest.raises(IllegalMoveError):
        bot.push("b2")
    reply = bot.reply()
    assert bot.record() == ["b2", reply]
    bot.undo(2)
    assert bot.record() == []
    with pytest.raises(GameError, match="unknown level"):
        agent_spec("nightmare", None, 1.0, None, 0)
    assert agent_spec("balanced", "n.h5", None, 50, 0).startswith("minibal_plus:iterations=50,net=n.h5")


def test_hint_is_the_strongest_move_and_leaves_the_playing_tree_alone():
    """`hint` asks a separate strongest-level analysis (Unbounded Minimax, same budget), not the
    balanced agent: x wins at once with a3 where the balanced agent keeps the game even; and the
    playing agent's tree (its root statistics) is the same after the hint."""
    from descent.api import Opponent
    bot = Opponent("tic_tac_toe", level="balanced", net=None, iterations=2000, seed=1)
    for m in ("a1", "b1", "a2", "b2"):
        bot.push(m)
    balanced = bot.state.move_to_str(bot.agent.choose(bot.state.copy()))
    assert balanced != "a3"
    before = bot.agent.search.analyse(bot.state)
    done = bot.agent.search.iterations_done
    assert bot.hint() == "a3" and bot.hint() == "a3"
    assert bot.agent.search.analyse(bot.state) == before
    assert bot.agent.search.iterations_done == done
    assert bot.hint_spec.startswith("minimax:iterations=2000,eval=playout")
    assert bot.reply() == balanced            # the game goes on with the balanced agent's move


def test_quit_leaves_the_game_instead_of_being_read_as_a_square():
    child = spawn("tic_tac_toe", "--plain", "--iterations", "50", "--net", "none")
    child.expect(r"Your move \(x\): ")
    child.sendline("quit")
    child.expect("You leave the game; it counts as resigned")
    child.expect(r"o wins by resignation")
    child.expect(r"Save the record to a file \(empty: no\)\? ")
    child.sendline("")
    child.expect(pexpect.EOF)
    assert "malformed" not in child.before


def test_elo_says_how_far_the_setting_is_and_balanced_its_place():
    from descent import strength
    spec = "havannah(base=4)"
    if strength.table(spec) is None:
        pytest.skip(f"no rating table ships for {spec}")
    pick = strength.level_for_elo(spec, 400)
    child = spawn(spec, "--plain", "--elo", "400")
    child.expect(r"Elo \+400 asked: plays ([^,]+), rated ([+-]\d+)")
    assert child.match.group(2) == f"{pick['elo']:+.0f}"
    child.expect(rf"{abs(pick['elo'] - 400):.0f} {'below' if pick['elo'] < 400 else 'above'} the request")
    child.sendline("resign")
    child.sendline("")
    child.expect(pexpect.EOF)
    child = spawn(spec, "--plain")
    child.expect("The balanced level: its ladder rating measures it against fixed searchers")
    child.expect(r"head to head it scores 0\.\d\d against hard")
    child.sendline("resign")
    child.sendline("")
    child.expect(pexpect.EOF)


def test_levels_lists_ratings_and_tells_levels_of_one_strength_apart():
    from click.testing import CliRunner
    from descent import strength
    from descent.cli import cli
    r = CliRunner().invoke(cli, ["levels", "breakthrough(rows=6,cols=6)"])
    assert r.exit_code == 0, r.output
    t = strength.table("breakthrough(rows=6,cols=6)")
    if t is not None:
        lines = r.output.splitlines()
        assert t["anchor"] in lines[0]
        for lvl, e in t["levels"].items():
            assert any(line.split()[:1] == [lvl] and f"{e['elo']:+.0f}" in line for line in lines), lvl
        # hard and strongest overlap on the ladder: the head-to-head score tells them apart
        assert "head to head it is the stronger: hard scores 0.30" in r.output
        assert "--elo N plays the measured setting nearest to N" in r.output
    r = CliRunner().invoke(cli, ["levels", "chess"])
    assert r.exit_code == 0 and "no rating table" in r.output and "not rated" in r.output
    r = CliRunner().invoke(cli, ["levels", "nochess"])
    assert r.exit_code == 2 and "unknown game" in r.output and "Traceback" not in r.output


def test_net_best_final_and_early_name_the_networks_in_any_spec():
    from descent import shipped
    from descent.networks import best_network, make_agent, resolve_net_names
    from training.network import CheckpointError
    spec = "reversi(size=6)"
    assert resolve_net_names("minimax:iterations=5,net=best", spec) == \
        f"minimax:iterations=5,net={best_network(spec)}"
    assert resolve_net_names("minibal_plus:net=final,iterations=5", spec) == \
        f"minibal_plus:net={shipped.network(spec, 'final')},iterations=5"
    assert resolve_net_names("gaussian:level=easy,base=minimax,net=early", spec).endswith("early.weights.h5")
    assert resolve_net_names("minimax:net=./best", spec) == "minimax:net=./best"
    agent = make_agent("minimax:iterations=5,net=early,seed=1", spec)
    assert agent.opts["net"] == shipped.network(spec, "early")
    with pytest.raises(CheckpointError, match="net=final: chess has no shipped final network"):
        make_agent("minimax:iterations=5,net=final", "chess")
    from click.testing import CliRunner
    from descent.cli import cli
    r = CliRunner().invoke(cli, ["match", "tic_tac_toe", "--first", "minimax:iterations=20,net=best",
                                 "--second", "minimax:iterations=20,net=early", "--games", "2"])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(cli, ["match", "chess", "--first", "minimax:iterations=5,net=best",
                                 "--second", "random", "--games", "1"])
    assert r.exit_code == 2 and "net=best: chess has no network" in r.output and "Traceback" not in r.output
