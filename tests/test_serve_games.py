"""`descent serve` with games that are not built in: a plugin's (the worked example's Connect Four,
``module:Class``) and OpenSpiel's, drawn on the generic grid (descent/web/grid.py) from their facts
and text, with no network (the computer's leaves are random playouts). The grid's geometry over
random games, whole games through the JSON API, and the command's ``--game``. Budgets are small
iteration counts; every random choice is seeded."""
import json
import os
import random
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")
from click.testing import CliRunner  # noqa: E402
from starlette.testclient import TestClient  # noqa: E402

import games  # noqa: E402
from descent.cli import cli  # noqa: E402
from descent.web import board, grid  # noqa: E402
from descent.web.app import available_games, create_app  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
C4 = "examples.connect_four:ConnectFour"
HAVE_OPENSPIEL = bool(__import__("importlib").util.find_spec("pyspiel"))
needs_openspiel = pytest.mark.skipif(not HAVE_OPENSPIEL, reason="open_spiel is not installed "
                                                                "(pip install -e '.[openspiel]')")
pytestmark = pytest.mark.usefixtures("serve_data_dir")   # (tests/conftest.py)

# each game and the way a click becomes a move on its grid (descent.web.grid)
MODES = [(C4, "columns"), (f"{C4}(rows=5,columns=4)", "columns"),
         pytest.param("openspiel:tic_tac_toe", "cells", marks=needs_openspiel),
         pytest.param("openspiel:connect_four", "columns", marks=needs_openspiel),
         pytest.param("openspiel:breakthrough(rows=6,columns=6)", "text", marks=needs_openspiel),
         pytest.param("openspiel:othello", "text", marks=needs_openspiel),
         pytest.param("openspiel:hex(board_size=5)", "text", marks=needs_openspiel),
         pytest.param("openspiel:checkers", "text", marks=needs_openspiel),
         pytest.param("openspiel:clobber", "text", marks=needs_openspiel),
         pytest.param("openspiel:nim", "list", marks=needs_openspiel)]


@pytest.mark.parametrize("spec,mode", MODES)
def test_the_generic_grid_draws_the_game_and_its_clicks_give_its_moves(spec, mode):
    """Over random games: the grid is the game's (planes H x W), its cells' names unique; every move a
    click gives names cells of the board; a placement's cell is empty before and the mover's after;
    a move from a cell starts on a piece of the mover; a column's area is the column of its cell;
    the last move is marked on the cells it changed."""
    info = games.load(spec)
    lay = grid.layout(info)
    assert lay.mode == mode
    h, w = info.planes_shape[:2]
    if mode != "list":
        assert (lay.rows, lay.cols) == (h, w) and lay.parsed
    rng = random.Random(11)
    for _ in range(2):
        s = info.new_state()
        while not s.is_game_over() and s.ply < 120:
            view = board.view(s)
            assert view["generic"] and view["mode"] == mode
            cell = {c["name"]: c for c in view["cells"] if c["name"]}
            assert len(cell) == len(view["cells"]) == lay.rows * lay.cols
            for c in view["cells"]:
                assert (c["piece"] is None) == (c["owner"] is None) or c["glyph"]
            moves = board.moves(s)
            assert [m["text"] for m in moves] == [s.move_to_str(a) for a in s.legal_actions_list()]
            for m in moves:
                sq = m["squares"]
                assert all(x in cell for x in sq), m
                if mode == "list":
                    assert sq == [] and "area" not in m
                if mode == "columns":
                    assert len(sq) == 1 and sq[0] in m["area"]
                    assert {cell[x]["x"] for x in m["area"]} == {cell[sq[0]]["x"]}
                if len(sq) == 1:
                    assert cell[sq[0]]["piece"] is None, (m, str(s))
                    after = s.copy()
                    after.push(after.parse_move(m["text"]))
                    now = {c["name"]: c for c in board.view(after)["cells"]}
                    assert now[sq[0]]["owner"] == s.to_move, (m, str(after))
                elif len(sq) > 1:
                    assert cell[sq[0]]["owner"] == s.to_move, (m, str(s))
            a = rng.choice(s.legal_actions_list())
            expect = grid.squares(s, a)
            s.push(a)
            assert board.last_squares(s, s.move_to_str(a), set(cell)) == (
                expect if mode != "columns" else grid.last_squares(s))
    if mode == "columns":
        s = info.new_state()
        s.push(0)
        assert grid.last_squares(s) == [lay.names[lay.rows - 1][0]]      # it lands at the bottom


def test_the_sides_say_whose_pieces_are_whose():
    info = games.load(C4)
    assert board.sides(info) == ["red (black, x)", "yellow (white, o)"]
    assert board.sides(games.load("tic_tac_toe")) == ["black (x)", "white (o)"]      # built in: as before


def test_a_drawing_is_read_with_its_labels():
    rows, row_labels, col_labels = grid.parse("8 . x\n7 o .\n  a b\n", 2, 2)
    assert rows == [[".", "x"], ["o", "."]] and row_labels == ["8", "7"] and col_labels == ["a", "b"]
    rows, row_labels, col_labels = grid.parse("Black to play:\n  a b c  \n1 - - - 1\n2 - x o 2\n", 2, 3)
    assert rows == [["-", "-", "-"], ["-", "x", "o"]] and row_labels == ["1", "2"] and col_labels == list("abc")
    assert grid.parse("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1", 8, 8)[0][2] == ["."] * 8
    assert grid.parse("...\n...\n...", 1, 9)[0] == [["."] * 3] * 3           # as many cells, drawn 3 x 3
    assert grid.parse("no board here", 3, 3) is None


# ---- the JSON API ---------------------------------------------------------------------------------

NAMED = [C4] + (["openspiel:tic_tac_toe", "openspiel:breakthrough(rows=6,columns=6)"] if HAVE_OPENSPIEL else [])


@pytest.fixture(scope="module")
def client(serve_data_dir):
    with TestClient(create_app(iterations=20, max_games=8, named=NAMED)) as c:
        yield c


def _click(view, rng):
    """A move as a person clicks it on the page: a placement's cell, a move's two ends, a column."""
    moves = view["moves"]
    m = rng.choice(moves)
    by_click = [x for x in moves if x["squares"] == m["squares"]] if m["squares"] else [m]
    assert m in by_click
    return m["text"]


def play_through(client, spec, side, seed):
    rng = random.Random(seed)
    r = client.post("/api/new", json={"game": spec, "level": "balanced", "side": side})
    assert r.status_code == 201, r.text
    v = r.json()
    assert v["board"]["generic"] and v["network"] is None
    assert "random playouts" in " ".join(v["about"])
    while not v["over"]:
        if v["your_turn"]:
            assert v["moves"]
            v = client.post(f"/api/game/{v['id']}/move", json={"move": _click(v, rng)}).json()
        else:
            v = client.post(f"/api/game/{v['id']}/reply").json()
        assert "error" not in v, v
        assert v["last"]["text"] == v["record"][-1]
    assert v["result"]["score"] in ("1-0", "0-1", "1/2-1/2") and v["moves"] == []
    record = client.get(f"/api/game/{v['id']}/record")
    assert record.status_code == 200 and f'[Game "{v["game"]}"]' in record.text
    return v


def test_the_page_offers_the_named_games_without_a_network(client):
    offered = {g["spec"]: g for g in client.get("/api/games").json()["games"]}
    for spec in NAMED:
        spec = games.load(spec).spec
        assert offered[spec]["network"] is None and offered[spec]["named"]
    assert not offered["tic_tac_toe"]["named"]


@pytest.mark.parametrize("spec,side", [(C4, "first"), (C4, "second"),
                                       pytest.param("openspiel:tic_tac_toe", "first", marks=needs_openspiel)])
def test_a_whole_game_through_the_api(client, spec, side):
    v = play_through(client, spec, side, seed=3)
    if spec == C4:
        assert v["sides"] == ["red (black, x)", "yellow (white, o)"] and v["board"]["mode"] == "columns"
        dropped = sum(1 for c in v["board"]["cells"] if c["piece"])
        assert dropped == len(v["record"])          # every move's stone is on the board


@needs_openspiel
def test_breakthrough_from_openspiel_moves_by_two_cells_and_hints(client):
    v = client.post("/api/new", json={"game": "openspiel:breakthrough(columns=6,rows=6)",
                                      "level": "easy"}).json()
    assert v["board"]["mode"] == "text" and all(len(m["squares"]) == 2 for m in v["moves"])
    hint = client.post(f"/api/game/{v['id']}/hint").json()["hint"]
    assert len(hint["squares"]) == 2 and "".join(hint["squares"]) in hint["text"]
    m = v["moves"][0]
    v = client.post(f"/api/game/{v['id']}/move", json={"move": m["text"]}).json()
    assert v["last"]["squares"] == m["squares"]
    undone = client.post(f"/api/game/{v['id']}/undo").json()
    assert undone["record"] == [] and undone["undone"] == 1


def test_a_hint_on_the_columns_board_marks_where_the_stone_lands(client):
    v = client.post("/api/new", json={"game": C4, "level": "easy"}).json()
    hint = client.post(f"/api/game/{v['id']}/hint").json()["hint"]
    assert len(hint["text"]) == 1 and len(hint["squares"]) == 1 and hint["squares"][0].endswith("1")


def test_a_game_not_named_is_not_offered(client):
    r = client.post("/api/new", json={"game": f"{C4}(rows=5)", "level": "easy"})
    assert r.status_code == 400 and "unknown game" in r.json()["error"]


def test_available_games_refuses_a_bad_named_game_with_its_error():
    with pytest.raises(games.GameError, match="cannot import no_such_module_zz"):
        available_games(named=["no_such_module_zz:Game"])


# ---- the command ------------------------------------------------------------------------------

def test_serve_refuses_a_bad_game_in_one_line():
    r = CliRunner().invoke(cli, ["serve", "--game", "no_such_module_zz:Game", "--port", "1"])
    assert r.exit_code == 2 and "Traceback" not in r.output
    assert r.output.strip().splitlines()[-1].startswith("Error: no_such_module_zz:Game: cannot import")


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _serve(port, data, *argv):
    proc = subprocess.Popen([sys.executable, "-m", "descent", "serve", "--port", str(port), "--iterations", "5",
                             *argv], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT,
                            env=dict(os.environ, DESCENT_DATA_DIR=str(data)))
    line = proc.stdout.readline()
    assert f"http://127.0.0.1:{port}/" in line, line
    return proc, line


def test_serve_game_offers_a_plugin_game_and_brings_it_back_only_where_named(tmp_path):
    """``descent serve --game module:Class``: the game is offered and played; a restarted server that
    names it brings the game back from its record, one that does not refuses it in one line (a
    stored game never imports a module the command line did not name)."""
    import http.cookiejar
    port = _free_port()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))

    def call(method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        for _ in range(300):
            try:
                with opener.open(req, timeout=60) as r:
                    return r.status, json.load(r)
            except urllib.error.HTTPError as exc:
                return exc.code, json.load(exc)
            except OSError:
                time.sleep(0.1)
        pytest.fail("the server did not answer")

    proc, line = _serve(port, tmp_path, "--game", C4)
    try:
        assert C4 in line
        status, offered = call("GET", "/api/games")
        assert {g["spec"]: g["network"] for g in offered["games"]}[C4] is None
        status, g = call("POST", "/api/new", {"game": C4, "level": "easy"})
        assert status == 201
        status, g = call("POST", f"/api/game/{g['id']}/move", {"move": "d"})
        status, g = call("POST", f"/api/game/{g['id']}/reply")
        assert status == 200 and len(g["record"]) == 2
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    proc, _ = _serve(port, tmp_path, "--game", C4)
    try:
        status, back = call("GET", f"/api/game/{g['id']}")
        assert status == 200 and back["record"] == g["record"] and back["your_turn"]
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    proc, _ = _serve(port, tmp_path)
    try:
        status, err = call("GET", f"/api/game/{g['id']}")
        assert status == 404 and "is not imported" in err["error"] and "\n" not in err["error"]
    finally:
        proc.terminate()
        proc.wait(timeout=30)
