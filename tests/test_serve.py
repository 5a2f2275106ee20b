"""`descent serve`: the board geometry of every game, the JSON API through Starlette's test client
(games, moves, bad moves, undo, hint, resign, the record, several games at once, bad requests), and
the command itself. Budgets are small iteration counts, so nothing depends on machine speed."""
import asyncio
import json
import os
import random
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")
from click.testing import CliRunner  # noqa: E402
from starlette.testclient import TestClient  # noqa: E402

import games  # noqa: E402
from descent.api import LEVELS  # noqa: E402
from descent.cli import cli  # noqa: E402
from descent.web import board  # noqa: E402
from descent.web.app import available_games, create_app, level_rating  # noqa: E402
from tests.conftest import GAME_SPECS  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


pytestmark = pytest.mark.usefixtures("serve_data_dir")   # (tests/conftest.py)


@pytest.fixture(scope="module")
def app(serve_data_dir):
    application = create_app(iterations=30, max_games=64)
    with TestClient(application) as client:
        yield client


def new(client, game="tic_tac_toe", level="balanced", side="first", **extra):
    r = client.post("/api/new", json=dict(game=game, level=level, side=side, **extra))
    assert r.status_code == 201, r.text
    return r.json()


def error_of(r, status):
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("application/json")
    body = r.json()
    assert set(body) == {"error"} and body["error"] and "\n" not in body["error"]
    assert "Traceback" not in r.text
    return body["error"]


# ---- the board the page draws ----------------------------------------------------------------

@pytest.mark.parametrize("spec", GAME_SPECS)
def test_board_geometry_matches_the_moves(spec):
    """Over random games: cell names are unique; every legal move names cells of the board (or none:
    pass, swap); a move's first square holds a piece of the mover; a placement lands on an empty cell."""
    info = games.load(spec)
    rng = random.Random(7)
    for _ in range(2):
        s = info.new_state()
        while not s.is_game_over() and s.ply < 150:
            view = board.view(s)
            named = [c for c in view["cells"] if c["name"]]
            cell = {c["name"]: c for c in named}
            assert len(cell) == len(named)
            for c in view["cells"]:
                assert (c["piece"] is None) == (c["owner"] is None)
            for m in board.moves(s):
                sq = m["squares"]
                assert sq or m["text"] in ("pass", "swap"), m
                if len(sq) == 1:
                    assert cell[sq[0]]["piece"] is None, (m, s.position())
                elif len(sq) > 1:
                    assert cell[sq[0]]["owner"] == s.to_move, (m, s.position())
            s.push(rng.choice(s.legal_actions_list()))


@pytest.mark.parametrize("size,squares", [(10, 50), (8, 32)])
def test_draughts_squares_are_numbered_as_the_engine_numbers_them(size, squares):
    info = games.load(f"international_draughts(board={size})")
    for k in (1, 2, squares // 2, squares - 1):
        s = info.new_state()
        s.set_position(f"W:WK{k}:BK{squares if k != squares else 1}")
        cell = {c["name"]: c for c in board.view(s)["cells"] if c["name"]}
        assert len(cell) == squares
        assert cell[str(k)]["piece"] == "W"


def test_point_boards_have_the_lines_of_their_drawings():
    """tapatan and alquerque: each line joins points the drawing joins ('-', '|', '\\', '/')."""
    for spec in ("tapatan", "alquerque"):
        s = games.load(spec).new_state()
        view = board.view(s)
        rows = [ln for ln in str(s).splitlines()[:-1]]      # the last line is the column letters
        where = {c["name"]: c for c in view["cells"]}
        for a, b in view["lines"]:
            top, low = sorted((where[a], where[b]), key=lambda c: c["y"])
            left, dc = min(top["x"], low["x"]), low["x"] - top["x"]
            if top["y"] == low["y"]:
                assert rows[2 * top["y"]][3 + 4 * left + 2] == "-", (spec, a, b)
            elif dc == 0:
                assert rows[2 * top["y"] + 1][3 + 4 * left] == "|", (spec, a, b)
            else:
                assert rows[2 * top["y"] + 1][3 + 4 * left + 2] == ("\\" if dc > 0 else "/"), (spec, a, b)
        assert len(view["lines"]) == {"tapatan": 16, "alquerque": 56}[spec]


def test_havannah_is_hexagonal_with_the_swap_as_a_button():
    s = games.load("havannah(base=4)").new_state()
    view = board.view(s)
    assert view["shape"] == "hex" and len(view["cells"]) == 37
    s.push(s.parse_move("b2"))
    moves = {m["text"]: m["squares"] for m in board.moves(s)}
    assert moves["swap"] == [] and moves["c3"] == ["c3"]


# ---- the API -----------------------------------------------------------------------------------

def test_lists_games_with_networks_and_every_level(app):
    data = app.get("/api/games").json()
    specs = [g["spec"] for g in data["games"]]
    assert "tic_tac_toe" in specs and "reversi(size=6)" in specs and "breakthrough(rows=6,cols=6)" in specs
    from descent.shipped import entries
    assert {card["game"] for _, card in entries()} <= set(specs)
    for g in data["games"]:
        assert [lv["name"] for lv in g["levels"]] == list(LEVELS)
        # the server was given a budget: the rating tables (made at the levels' budgets) do not apply
        assert all(lv["rating"] is None for lv in g["levels"])
    levels = app.get("/api/levels").json()["levels"]
    assert [lv["name"] for lv in levels] == list(LEVELS) and all(lv["about"] for lv in levels)


def test_level_ratings_are_shown_where_a_table_rates_them():
    strength = pytest.importorskip("descent.strength")
    with TestClient(create_app()) as c:
        offered = {g["spec"]: g for g in c.get("/api/games").json()["games"]}
        rated = 0
        for spec, g in offered.items():
            table = strength.level_ratings(spec)
            for lv in g["levels"]:
                assert lv["rating"] == level_rating(spec, lv["name"])
                if lv["rating"] is not None:
                    rated += 1
                    assert lv["rating"]["elo"] == table[lv["name"]]["elo"] and lv["rating"]["anchor"]
                    assert lv["rating"]["low"] <= lv["rating"]["elo"] <= lv["rating"]["high"]
                else:
                    assert lv["name"] not in table or g["network"] == "trained"
        if not strength.level_ratings("reversi(size=6)"):
            pytest.skip("no rating table ships for reversi(size=6)")
        assert rated >= 5
        # a game's view carries the rating of the setting it plays (descent.api.Opponent.rating)
        g = new(c, game="reversi(size=6)", level="easy")
        assert g["rating"]["elo"] == strength.level_ratings("reversi(size=6)")["easy"]["elo"]
    assert level_rating("reversi(size=6)", "easy", budget_given=True) is None


def test_a_game_at_an_elo_the_person_names():
    strength = pytest.importorskip("descent.strength")
    spec = "reversi(size=6)"
    if strength.table(spec) is None:
        pytest.skip(f"no rating table ships for {spec}")
    with TestClient(create_app()) as c:
        offered = {g["spec"]: g for g in c.get("/api/games").json()["games"]}
        rng = offered[spec]["elo"]
        settings = strength.table(spec)["settings"]
        assert (rng["low"], rng["high"]) == (settings[0]["elo"], settings[-1]["elo"]) and rng["anchor"]
        assert offered["tic_tac_toe"]["elo"] is None          # no table: no Elo to ask for
        asked = (rng["low"] + rng["high"]) / 2
        r = c.post("/api/new", json={"game": spec, "elo": asked, "side": "second"})
        assert r.status_code == 201, r.text
        g = r.json()
        pick = strength.level_for_elo(spec, asked)
        assert g["rating"]["elo"] == pick["elo"] and g["level"].startswith("elo ")
        g = c.post(f"/api/game/{g['id']}/reply").json()         # it plays at that setting
        assert g["your_turn"] and len(g["record"]) == 1
        assert "outside the rated range" in error_of(
            c.post("/api/new", json={"game": spec, "elo": rng["high"] + 1000}), 400)
        error_of(c.post("/api/new", json={"game": spec, "elo": "strong"}), 400)
        error_of(c.post("/api/new", json={"game": spec, "elo": True}), 400)
        error_of(c.post("/api/new", json={"game": spec, "elo": asked, "level": "easy"}), 400)
        assert "no Elo" in error_of(c.post("/api/new", json={"game": "tic_tac_toe", "elo": 0}), 400)
    with TestClient(create_app(iterations=30)) as c:       # a fixed budget: the table does not apply
        assert all(g["elo"] is None for g in c.get("/api/games").json()["games"])
        assert "no Elo" in error_of(c.post("/api/new", json={"game": spec, "elo": 0}), 400)


def test_a_failed_computer_move_leaves_the_game_playable():
    """A search that fails answers 500 and leaves the game where it was: not thinking, the
    computer to move, and the page's "Computer, move" asks again."""
    with TestClient(create_app(iterations=30), raise_server_exceptions=False) as app:
        _failed_computer_move(app)


def _failed_computer_move(app):
    g = new(app, side="second")
    session = app.app.state.hub.sessions[g["id"]]
    real = session.bot.reply
    def failing_search():
        raise RuntimeError("the search failed")

    session.bot.reply = failing_search
    assert "internal error" in error_of(app.post(f"/api/game/{g['id']}/reply"), 500)
    view = app.get(f"/api/game/{g['id']}").json()
    assert not view["thinking"] and not view["your_turn"] and not view["over"] and view["record"] == []
    session.bot.reply = real
    view = app.post(f"/api/game/{g['id']}/reply").json()
    assert view["your_turn"] and len(view["record"]) == 1
    assert 'id="computer-move"' in app.get("/").text


def test_a_whole_game_with_a_bad_move_hint_undo_and_the_record(app):
    g = new(app)
    gid = g["id"]
    assert g["your_turn"] and not g["over"] and g["you"] == 0 and g["network"]
    assert sorted(m["text"] for m in g["moves"]) == sorted(m["squares"][0] for m in g["moves"])
    g = app.post(f"/api/game/{gid}/move", json={"move": "b2"}).json()
    assert g["last"] == {"text": "b2", "squares": ["b2"], "by": "you"} and not g["your_turn"]
    assert "computer's turn" in error_of(app.post(f"/api/game/{gid}/move", json={"move": "a1"}), 409)
    g = app.post(f"/api/game/{gid}/reply").json()
    assert g["your_turn"] and g["last"]["by"] == "computer" and g["played"] == g["record"][-1]
    msg = error_of(app.post(f"/api/game/{gid}/move", json={"move": "b2"}), 400)
    assert "b2" in msg and "illegal" in msg
    error_of(app.post(f"/api/game/{gid}/move", json={"move": "z9"}), 400)
    error_of(app.post(f"/api/game/{gid}/move", json={"move": 5}), 400)
    assert app.get(f"/api/game/{gid}").json()["record"] == g["record"]      # unchanged
    h = app.post(f"/api/game/{gid}/hint").json()
    assert h["hint"]["text"] in [m["text"] for m in g["moves"]] and h["record"] == g["record"]
    u = app.post(f"/api/game/{gid}/undo").json()
    assert u["undone"] == 2 and u["record"] == [] and u["your_turn"]
    error_of(app.post(f"/api/game/{gid}/undo"), 409)
    while not g["over"]:
        if g["your_turn"]:
            g = app.post(f"/api/game/{gid}/move", json={"move": g["moves"][-1]["text"]}).json()
        else:
            g = app.post(f"/api/game/{gid}/reply").json()
    assert g["result"]["text"] and g["result"]["score"] in ("1-0", "0-1", "1/2-1/2")
    assert not g["moves"]
    error_of(app.post(f"/api/game/{gid}/reply"), 409)
    error_of(app.post(f"/api/game/{gid}/undo"), 409)
    r = app.get(f"/api/game/{gid}/record")
    assert r.status_code == 200 and "attachment" in r.headers["content-disposition"]
    assert '[Game "tic_tac_toe"]' in r.text and f'[Result "{g["result"]["score"]}"]' in r.text
    assert r.text.split("\n")[-2].split()[0] == "1." + g["record"][0]


def test_second_side_resign_and_record(app):
    g = new(app, game="breakthrough(rows=6,cols=6)", level="easy", side="second")
    gid = g["id"]
    assert not g["your_turn"] and g["moves"] == []
    error_of(app.post(f"/api/game/{gid}/move", json={"move": "a5a4"}), 409)
    g = app.post(f"/api/game/{gid}/reply").json()
    assert g["your_turn"] and all(len(m["squares"]) == 2 for m in g["moves"])
    g = app.post(f"/api/game/{gid}/move", json={"move": g["moves"][0]["text"]}).json()
    g = app.post(f"/api/game/{gid}/resign").json()
    assert g["over"] and g["result"]["winner"] == 0 and "resigned" in g["result"]["text"]
    error_of(app.post(f"/api/game/{gid}/resign"), 409)
    text = app.get(f"/api/game/{gid}/record").text
    # a header per seat, named as the page names it, saying who played it
    assert '[Result "1-0"]' in text and "resignation" in text
    assert '[White "You"]' in text and '[Black "descent, easy"]' in text and "[You " not in text
    assert text.rstrip().endswith("1-0")


def test_havannah_swap_is_a_move(app):
    g = new(app, game="havannah(base=4)", level="strongest", side="second")
    g = app.post(f"/api/game/{g['id']}/reply").json()
    assert {"text": "swap", "squares": []} in g["moves"]
    g = app.post(f"/api/game/{g['id']}/move", json={"move": "swap"}).json()
    assert g["last"]["text"] == "swap" and not g["your_turn"]


def test_two_games_at_once_are_independent(app):
    a, b = new(app), new(app, game="reversi(size=6)")
    assert a["id"] != b["id"]
    app.post(f"/api/game/{a['id']}/move", json={"move": "a1"})
    assert app.get(f"/api/game/{b['id']}").json()["record"] == []
    app.post(f"/api/game/{b['id']}/move", json={"move": b["moves"][0]["text"]})
    assert app.get(f"/api/game/{a['id']}").json()["record"] == ["a1"]


def test_the_server_answers_while_games_think():
    """Two computers think at once (searches run off the event loop): meanwhile the server answers
    other requests, and shows both games as thinking."""
    import httpx
    application = create_app(iterations=4000)

    async def scenario():
        transport = httpx.ASGITransport(app=application)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as c:
            ids = []
            for _ in range(2):
                r = await c.post("/api/new", json={"game": "reversi(size=6)", "level": "strongest",
                                                   "side": "second"})
                ids.append(r.json()["id"])
            replies = [asyncio.ensure_future(c.post(f"/api/game/{gid}/reply")) for gid in ids]
            seen = set()
            while not all(t.done() for t in replies):
                assert (await c.get("/api/levels")).status_code == 200
                for gid in ids:
                    view = (await c.get(f"/api/game/{gid}")).json()
                    if view["thinking"]:
                        seen.add(gid)
                    # a request on a game whose computer is thinking is refused, not queued
                    if view["thinking"]:
                        r = await c.post(f"/api/game/{gid}/hint")
                        assert r.status_code == 409 and "thinking" in r.json()["error"]
                await asyncio.sleep(0.01)
            results = [t.result() for t in replies]
            assert all(r.status_code == 200 and r.json()["your_turn"] for r in results)
            return seen, ids

    seen, ids = asyncio.run(scenario())
    assert seen == set(ids)
    application.state.hub.close()


def test_the_cap_counts_only_games_in_progress():
    """--max-games counts games in progress: a finished or resigned game frees its slot at once and
    stays readable; an abandoned one (no request for idle_seconds) is closed and frees its slot."""
    # a frozen clock: no game ages but the one the test ages, however slow the machine
    with TestClient(create_app(iterations=5, max_games=2, idle_seconds=600, clock=lambda: 1000.0)) as c:
        a, b = new(c), new(c)
        r = c.post("/api/new", json={"game": "tic_tac_toe"})
        msg = error_of(r, 503)
        # when a table frees, from the games' state: at once when a game ends, an abandoned one
        # after the idle time left to it (the clock is frozen: the full 600 s)
        assert "all 2 tables are taken" in msg and "try again in a few seconds" in msg
        assert "10 minutes from now at the latest" in msg and "yours" in msg
        assert r.headers["retry-after"] == "30"
        c.app.state.hub.sessions[a["id"]].touched -= 590
        msg = error_of(c.post("/api/new", json={"game": "tic_tac_toe"}), 503)
        assert "10 seconds from now" in msg
        c.app.state.hub.sessions[a["id"]].touched += 590
        other = TestClient(c.app)          # another browser: not told the games are its own
        assert "yours" not in error_of(other.post("/api/new", json={"game": "tic_tac_toe"}), 503)
        # reading a game again and again (a reload) takes no slot
        for _ in range(3):
            assert c.get(f"/api/game/{a['id']}").json()["id"] == a["id"]
        error_of(c.post("/api/new", json={"game": "tic_tac_toe"}), 503)
        # a resigned game frees its slot at once, and its record is still there
        assert c.post(f"/api/game/{a['id']}/resign").json()["over"]
        d = new(c)
        assert c.get(f"/api/game/{a['id']}").json()["result"]["text"].startswith("You resigned")
        assert c.get(f"/api/game/{a['id']}/record").status_code == 200
        # a game played to its end frees its slot too
        hub = c.app.state.hub
        s = hub.sessions[d["id"]]
        while not s.over:
            if s.bot.state.to_move == s.seat:
                c.post(f"/api/game/{d['id']}/move", json={"move": c.get(f"/api/game/{d['id']}").json()["moves"][0]["text"]})
            else:
                c.post(f"/api/game/{d['id']}/reply")
        assert hub.in_progress() == 1
        e = new(c)
        error_of(c.post("/api/new", json={"game": "tic_tac_toe"}), 503)
        # a game nobody asked about for idle_seconds is unloaded as abandoned, freeing its slot;
        # its record is kept, and asking for it brings it back when a table is free
        hub.sessions[b["id"]].touched -= 601
        f = new(c)
        assert b["id"] not in hub.sessions
        assert "all 2 tables are taken" in error_of(c.get(f"/api/game/{b['id']}"), 503)
        assert "the one table is taken" in error_of(TestClient(create_app(max_games=0, store=False)).post(
            "/api/new", json={"game": "tic_tac_toe"}), 503)
        c.post(f"/api/game/{f['id']}/resign")
        assert c.get(f"/api/game/{b['id']}").json()["id"] == b["id"] and b["id"] in hub.sessions
        # a game closed by its player is gone for good
        assert c.delete(f"/api/game/{e['id']}").json() == {"closed": e["id"]}
        assert "was closed" in error_of(c.get(f"/api/game/{e['id']}"), 404)
        assert "was closed" in error_of(c.delete(f"/api/game/{e['id']}"), 404)
        assert c.get("/api/games").json()["idle_seconds"] == 600


def test_finished_games_kept_are_bounded():
    from descent.web.app import KEEP_FINISHED
    with TestClient(create_app(iterations=5, max_games=1)) as c:
        ids = []
        for _ in range(KEEP_FINISHED + 3):
            g = new(c)
            c.post(f"/api/game/{g['id']}/resign")
            ids.append(g["id"])
        hub = c.app.state.hub
        assert len(hub.sessions) <= KEEP_FINISHED + 1 and ids[-1] in hub.sessions
        assert ids[0] not in hub.sessions


def test_a_game_belongs_to_the_browser_that_started_it(app):
    """The owner cookie of POST /api/new: another client (another browser) gets 403 on the game."""
    g = new(app)
    assert app.cookies.get("descent_owner")
    other = TestClient(app.app)           # no `with`: the app's lifespan (its pool) is the fixture's
    for method, path in (("GET", ""), ("POST", "/reply"), ("POST", "/resign"), ("GET", "/record"),
                         ("DELETE", "")):
        assert "another browser" in error_of(other.request(method, f"/api/game/{g['id']}{path}"), 403)
    mine = other.post("/api/new", json={"game": "tic_tac_toe"}).json()
    assert other.cookies.get("descent_owner") != app.cookies.get("descent_owner")
    error_of(app.get(f"/api/game/{mine['id']}"), 403)
    assert app.get(f"/api/game/{g['id']}").json()["id"] == g["id"]


def test_deep_and_unknown_json_are_refused_with_400(app):
    gid = new(app)["id"]
    deep = b"[" * 2000 + b"]" * 2000
    assert "nested too deeply" in error_of(app.post("/api/new", content=deep), 400)
    assert "nested too deeply" in error_of(app.post(f"/api/game/{gid}/move", content=deep), 400)
    deep_obj = b'{"game": ' + b"[" * 1500 + b"]" * 1500 + b"}"
    error_of(app.post("/api/new", content=deep_obj), 400)
    msg = error_of(app.post("/api/new", json={"game": "tic_tac_toe", "net": "/etc/passwd"}), 400)
    assert "unknown field 'net'" in msg and "game, level, side" in msg
    assert "unknown field 'from'" in error_of(app.post(f"/api/game/{gid}/move", json={"move": "a1", "from": "b2"}), 400)


def test_the_view_names_sides_counts_discs_and_hides_server_paths(app):
    g = new(app, game="reversi(size=6)", level="balanced")
    assert g["sides"] == ["black (x)", "white (o)"] and g["count"] == [2, 2]
    assert g["network"] == "the network shipped for this game (final)"
    assert g["opponent"] == "balanced" and g["setting"]["search"] == "Unbounded Minibal_+"
    assert str(ROOT) not in json.dumps(g) and ".weights.h5" not in json.dumps(g)
    g = app.post(f"/api/game/{g['id']}/move", json={"move": g["moves"][0]["text"]}).json()
    assert sum(g["count"]) == 5
    t = new(app)
    assert t["count"] is None and t["sides"] == ["black (x)", "white (o)"]
    assert app.get("/favicon.ico").status_code == 200


def test_bad_requests_get_a_json_error(app):
    gid = new(app)["id"]
    error_of(app.post("/api/new", content=b"{not json"), 400)
    error_of(app.post("/api/new", content=b"\xff\xfe"), 400)
    error_of(app.post("/api/new", json=["tic_tac_toe"]), 400)
    error_of(app.post("/api/new", json={}), 400)
    error_of(app.post("/api/new", json={"game": 3}), 400)
    error_of(app.post("/api/new", json={"game": "tic_tac_toe", "level": True}), 400)
    assert "unknown game" in error_of(app.post("/api/new", json={"game": "chess"}), 400)
    assert "unknown game" in error_of(app.post("/api/new", json={"game": "../../etc/passwd"}), 400)
    assert "unknown level" in error_of(app.post("/api/new", json={"game": "tic_tac_toe", "level": "godlike"}), 400)
    error_of(app.post("/api/new", json={"game": "tic_tac_toe", "side": "middle"}), 400)
    assert "player name" in error_of(app.post("/api/new", json={"game": "tic_tac_toe", "level": "adaptive"}), 400)
    error_of(app.post("/api/new", json={"game": "tic_tac_toe", "level": "adaptive", "player": "../../x"}), 400)
    error_of(app.post("/api/new", json={"game": "tic_tac_toe", "player": "ann"}), 400)
    error_of(app.post("/api/new", content=b"{" + b" " * 10000 + b"}"), 413)
    error_of(app.post(f"/api/game/{gid}/move", json={}), 400)
    error_of(app.post(f"/api/game/{gid}/move", json={"move": "a1" * 200}), 400)
    error_of(app.get("/api/game/does-not-exist-1234"), 404)
    error_of(app.post("/api/game/does-not-exist-1234/move", json={"move": "a1"}), 404)
    error_of(app.get("/api/game/..%2F..%2Fetc/record"), 404)
    error_of(app.get("/api/game/" + "x" * 500), 404)
    error_of(app.get("/no/such/page"), 404)
    error_of(app.get("/static/../app.py"), 404)
    error_of(app.get("/api/new"), 405)
    error_of(app.put(f"/api/game/{gid}"), 405)


def test_the_page_and_its_files_are_served_with_nothing_from_elsewhere(app):
    page = app.get("/")
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    assert "default-src 'self'" in page.headers["content-security-policy"]
    for name in ("app.js", "style.css"):
        r = app.get(f"/static/{name}")
        assert r.status_code == 200 and "http://" not in r.text.replace("http://www.w3.org/2000/svg", "")
        assert "https://" not in r.text
    assert "https://" not in page.text and "http://" not in page.text


def test_adaptive_level_updates_the_profile(app, tmp_path, monkeypatch):
    monkeypatch.setenv("DESCENT_DATA_DIR", str(tmp_path))
    g = new(app, level="adaptive", player="ann")
    assert "adaptive for ann" in g["opponent"] and ".weights.h5" not in json.dumps(g)
    g = app.post(f"/api/game/{g['id']}/resign").json()
    assert g["profile"].startswith("Your profile is updated")
    files = list((tmp_path / "profiles").glob("ann-*.json"))
    assert len(files) == 1 and "tic_tac_toe" in files[0].read_text()


def test_a_trained_network_is_offered_and_played(tmp_path):
    """A network the user trained (`--root`) is offered beside the shipped ones, and plays. The
    user's run is made by hand (a milestone of a run directory holding a copy of the shipped early
    network, 200 games behind it): a real `descent train` of a few seconds may or may not reach a
    milestone, depending on the machine's speed."""
    import json
    import shutil
    from descent import shipped
    runs = tmp_path / "runs"
    src = shipped.entry_dir("tic_tac_toe")
    arch = json.loads((src / "card.json").read_text())["architecture"]
    member = runs / "tic" / "member_00"
    member.mkdir(parents=True)
    (runs / "tic" / "run.json").write_text(json.dumps({"game": "tic_tac_toe", "config": {"network": arch},
                                                       "seed": 0, "format": "descent-run-1"}))
    shutil.copy(src / "early.weights.h5", member / "milestone_0.5s.weights.h5")
    (member / "milestone_0.5s.json").write_text(json.dumps(
        {"game": "tic_tac_toe", "member": 0, "milestone": "0.5s", "milestone_seconds": 0.5,
         "train_seconds": 0.5, "network": arch, "planes_shape": [3, 3, 2], "games": 200, "examples": 1000}))
    offered = {g["spec"]: g["network"] for g in available_games(runs)}
    assert offered["tic_tac_toe"] == "trained" and offered["reversi(size=6)"] == "shipped"
    assert {g["spec"]: g["network"] for g in available_games(tmp_path / "empty")}["tic_tac_toe"] == "shipped"
    with TestClient(create_app(root=runs, iterations=10)) as c:
        g = new(c)
        assert g["network"] == "a network trained on this server (milestone 0.5s)"
        assert str(tmp_path) not in json.dumps(g) and ".weights.h5" not in json.dumps(g)
        g = c.post(f"/api/game/{g['id']}/move", json={"move": "b2"}).json()
        assert c.post(f"/api/game/{g['id']}/reply").json()["your_turn"]


# ---- what a person is told about the computer ---------------------------------------------------

PATHLIKE = (str(ROOT), "/checkpoints/", ".weights.h5", ".json", "/home/", "/tmp/", "net=")


def _no_paths(text: str, *more) -> None:
    for bit in PATHLIKE + tuple(str(m) for m in more):
        assert bit not in text, (bit, text[:2000])


def test_no_path_of_the_server_reaches_a_player(serve_data_dir):
    """Every level's new game, its view after a move, the game list, the start page's list, the
    record and the errors: no path of the server, nor a file name of its networks, in any answer."""
    rated = "reversi(size=6)"
    with TestClient(create_app(max_games=64)) as c:      # no budget given: the rated settings play
        answers = [c.get("/api/games").text, c.get("/api/levels").text]
        bodies = [{"level": lv} for lv in LEVELS if lv != "adaptive"] + [
            {"level": "adaptive", "player": "ann"}, {"elo": 0}]
        for spec in (rated, "tic_tac_toe", "breakthrough(rows=6,cols=6)"):
            for b in bodies:
                if "elo" in b and spec != rated:
                    continue
                r = c.post("/api/new", json=dict(b, game=spec))
                assert r.status_code == 201, r.text
                answers += [r.text, c.get(f"/api/game/{r.json()['id']}").text,
                            c.get(f"/api/game/{r.json()['id']}/record").text]
        g = new(c, level="easy")
        g = c.post(f"/api/game/{g['id']}/move", json={"move": "b2"}).json()
        answers += [json.dumps(c.post(f"/api/game/{g['id']}/reply").json()), c.get("/api/mine").text,
                    c.post(f"/api/game/{g['id']}/resign").text]
        answers += [c.post("/api/new", json={"game": "tic_tac_toe", "level": "adaptive", "player": "../x"}).text,
                    c.get("/api/game/" + "y" * 30).text]
    for text in answers:
        _no_paths(text, serve_data_dir)


def test_the_error_of_a_fault_deep_inside_names_no_path(app):
    """A message from inside the server (a checkpoint that cannot be read, say) quotes no path."""
    from descent.web.app import ApiError, scrub
    assert scrub(f"cannot read {ROOT}/checkpoints/shipped/x/final.weights.h5: bad") == \
        "cannot read final.weights.h5: bad"
    assert scrub("1/2-1/2 after a5a4, net=/srv/a/b.h5") == "1/2-1/2 after a5a4, net=b.h5"
    assert str(ROOT) not in ApiError(400, f"file {ROOT}/x.json is bad").message


def _signed(x):
    return f"{'+' if x >= 0 else '-'}{abs(round(x)):.0f}"


def test_the_opponent_is_a_level_and_its_rating_in_words():
    """The view's short line is "easy (Elo -735)"; its sentences say what the level does, how it
    searches and what the rating means; a level that won every ladder game is "at least" its bound,
    with the flag in the API, never a made-up interval."""
    strength = pytest.importorskip("descent.strength")
    spec = "reversi(size=6)"
    table = strength.level_ratings(spec)
    if not table:
        pytest.skip(f"no rating table ships for {spec}")
    with TestClient(create_app()) as c:
        levels = {g["spec"]: {lv["name"]: lv["rating"] for lv in g["levels"]}
                  for g in c.get("/api/games").json()["games"]}
        for lv in ("easy", "hard", "strongest"):
            g = new(c, game=spec, level=lv)
            e = table[lv]
            if e.get("at_least"):
                assert g["opponent"] == f"{lv} (Elo at least {_signed(e['elo'])})"
                assert g["rating"]["at_least"] is True and levels[spec][lv]["at_least"] is True
                assert any("lower bound" in a for a in g["about"])
                assert not any("interval" in a for a in g["about"])
            else:
                assert g["opponent"] == f"{lv} ({'Elo ' + _signed(e['elo'])})"
                assert g["rating"]["at_least"] is False and levels[spec][lv]["at_least"] is False
                assert any("95% interval" in a for a in g["about"])
            assert g["setting"]["search"] == "Unbounded Minimax" and g["setting"]["iterations"] == 40
            assert any("Unbounded Minimax at 40 iterations a move" in a for a in g["about"])
        assert any(r and r["at_least"] for g in levels.values() for r in g.values()), \
            "no level of a shipped table is a lower bound: the at-least case is untested"
        t = new(c)                                  # no table: no rating, the level's name alone
        assert t["opponent"] == "balanced" and t["rating"] is None and t["about"]


def test_a_draw_is_said_once_and_a_long_id_is_cut(app):
    """"Draw." (not "Draw (draw)."); the 404 of a 10,000-character id quotes 40 of them."""
    g = new(app)
    s = app.app.state.hub.sessions[g["id"]]
    for m in ("b2", "a1", "c1", "a3", "a2", "c2", "b1", "b3", "c3"):      # a drawn game
        s.bot.push(m)
    view = app.get(f"/api/game/{g['id']}").json()
    assert view["over"] and view["result"]["text"] == "Draw." and view["result"]["score"] == "1/2-1/2"
    msg = error_of(app.get("/api/game/" + "z" * 10000), 404)
    assert len(msg) < 120 and "z" * 40 + "..." in msg and "z" * 41 not in msg


def test_a_new_game_replaces_the_pages_game_only_once_it_stands():
    with TestClient(create_app(iterations=5, max_games=1)) as c:
        a = new(c)
        # a refused new game (a bad level) leaves the old one as it was
        error_of(c.post("/api/new", json={"game": "tic_tac_toe", "level": "godlike", "replace": a["id"]}), 400)
        assert c.get(f"/api/game/{a['id']}").json()["id"] == a["id"]
        # another browser cannot close it by naming it
        other = TestClient(c.app)
        error_of(other.post("/api/new", json={"game": "tic_tac_toe", "replace": a["id"]}), 503)
        # its own page can: the one table serves the new game
        b = new(c, replace=a["id"])
        assert "was closed" in error_of(c.get(f"/api/game/{a['id']}"), 404)
        assert [x["id"] for x in c.get("/api/mine").json()["games"]] == [b["id"]]


def test_the_start_page_lists_the_persons_games_in_progress(app):
    other = TestClient(app.app)
    assert other.get("/api/mine").json() == {"games": []}
    g = other.post("/api/new", json={"game": "tic_tac_toe", "level": "easy"}).json()
    other.post(f"/api/game/{g['id']}/move", json={"move": "b2"})
    mine = other.get("/api/mine").json()["games"]
    assert mine == [{"id": g["id"], "game": "tic_tac_toe", "level": "easy", "plies": 1,
                     "started": mine[0]["started"]}]
    other.post(f"/api/game/{g['id']}/resign")
    assert other.get("/api/mine").json() == {"games": []}


def test_the_network_backend_loads_before_the_first_request(tmp_path):
    """The inference backend's import (about a second, holding the GIL) is done at start, before
    the server answers, so the first new game stalls nobody's requests."""
    pytest.importorskip("onnxruntime")
    code = ("import sys\nfrom starlette.testclient import TestClient\nfrom descent.web.app import create_app\n"
            "app = create_app(iterations=5)\nassert 'onnxruntime' not in sys.modules\n"
            "with TestClient(app) as c:\n    print('onnxruntime' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300,
                         env=dict(os.environ, DESCENT_DATA_DIR=str(tmp_path)))
    assert out.returncode == 0 and out.stdout.strip() == "True", out.stderr


# ---- games kept across restarts ---------------------------------------------------------------------

def test_a_game_comes_back_after_a_restart_at_the_same_ply(tmp_path):
    """The store (SQLite beside the data) keeps every game: a new server on the same file rebuilds
    a game from its record when its owner asks, at the same ply; finished games come back as
    records; closed ones and other browsers' do not."""
    db = tmp_path / "games.sqlite3"
    with TestClient(create_app(iterations=5, store=db)) as c:
        g = new(c, game="breakthrough(rows=6,cols=6)", level="easy", side="second")
        g = c.post(f"/api/game/{g['id']}/reply").json()
        g = c.post(f"/api/game/{g['id']}/move", json={"move": g["moves"][0]["text"]}).json()
        g = c.post(f"/api/game/{g['id']}/reply").json()
        done = new(c)
        c.post(f"/api/game/{done['id']}/resign")
        gone = new(c)
        c.delete(f"/api/game/{gone['id']}")
        cookie = c.cookies.get("descent_owner")
    with TestClient(create_app(iterations=5, store=db)) as c:
        assert "another browser" in error_of(c.get(f"/api/game/{g['id']}"), 403)
        c.cookies.set("descent_owner", cookie)
        assert [x["id"] for x in c.get("/api/mine").json()["games"]] == [g["id"]]
        back = c.get(f"/api/game/{g['id']}").json()
        assert back["record"] == g["record"] and len(back["record"]) == 3 and back["your_turn"]
        assert back["you"] == 1 and back["level"] == "easy" and back["opponent"] == g["opponent"]
        back = c.post(f"/api/game/{g['id']}/move", json={"move": back["moves"][0]["text"]}).json()
        assert len(back["record"]) == 4
        old = c.get(f"/api/game/{done['id']}").json()
        assert old["over"] and "resigned" in old["result"]["text"]
        assert "resignation" in c.get(f"/api/game/{done['id']}/record").text
        assert "was closed" in error_of(c.get(f"/api/game/{gone['id']}"), 404)
    with TestClient(create_app(iterations=5, store=db)) as c:     # the move after the restart is kept too
        c.cookies.set("descent_owner", cookie)
        assert c.get(f"/api/game/{g['id']}").json()["record"] == back["record"]


def test_a_record_that_no_longer_replays_comes_back_as_far_as_it_goes(tmp_path):
    import sqlite3
    db = tmp_path / "games.sqlite3"
    with TestClient(create_app(iterations=5, store=db)) as c:
        g = new(c)
        c.post(f"/api/game/{g['id']}/move", json={"move": "b2"})
        cookie = c.cookies.get("descent_owner")
    with sqlite3.connect(db) as con:
        con.execute("UPDATE games SET moves = ? WHERE id = ?", (json.dumps(["b2", "b2", "a1"]), g["id"]))
    with TestClient(create_app(iterations=5, store=db)) as c:
        c.cookies.set("descent_owner", cookie)
        assert c.get(f"/api/game/{g['id']}").json()["record"] == ["b2"]


def test_an_unusable_games_file_leaves_the_server_playing_in_memory(tmp_path, caplog):
    bad = tmp_path / "games.sqlite3"
    bad.write_bytes(b"this is not a database" * 100)
    with caplog.at_level("WARNING", logger="descent.web"):
        with TestClient(create_app(iterations=5, store=bad)) as c:
            g = new(c)
            assert c.post(f"/api/game/{g['id']}/move", json={"move": "b2"}).status_code == 200
    assert "memory only" in caplog.text


def test_a_crash_in_the_middle_of_a_write_loses_at_most_that_move(tmp_path):
    """Each change is one transaction: a process killed between writing a move and committing it
    leaves the game as it was before that move; one killed just after leaves the move in."""
    from descent.web.store import Store
    db = tmp_path / "games.sqlite3"
    store = Store(db)
    store.add({"id": "g" * 16, "owner": "o" * 24, "game": "tic_tac_toe", "level": "easy", "elo": None,
               "player": None, "seat": 0, "seed": 1, "moves": ["b2", "a1"], "started": "2026-01-01 00:00:00"})
    store.close()
    killed = ("import os, signal, sys\nfrom descent.web.store import Store\ns = Store(sys.argv[1])\n"
              "s._db.execute('BEGIN IMMEDIATE')\n"
              "s._db.execute(\"UPDATE games SET moves = '[\\\"b2\\\", \\\"a1\\\", \\\"c3\\\"]'\")\n"
              "{commit}os.kill(os.getpid(), signal.SIGKILL)\n")
    for commit, expected in (("", ["b2", "a1"]), ("s._db.execute('COMMIT')\n", ["b2", "a1", "c3"])):
        r = subprocess.run([sys.executable, "-c", killed.format(commit=commit), str(db)], cwd=ROOT,
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == -9, r.stderr
        assert Store(db).get("g" * 16)["moves"] == expected


# ---- the command ---------------------------------------------------------------------------------

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_serve_without_the_web_extra_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "uvicorn", None)
    r = CliRunner().invoke(cli, ["serve"])
    assert r.exit_code == 2 and f"pip install -e '{ROOT}[web]'" in r.output
    assert "descent[web]" not in r.output
    assert len(r.output.strip().splitlines()) == 1


def test_serve_refuses_a_port_in_use_and_a_missing_root(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        r = CliRunner().invoke(cli, ["serve", "--port", str(s.getsockname()[1])])
    assert r.exit_code == 2 and "cannot listen" in r.output and "Traceback" not in r.output
    r = CliRunner().invoke(cli, ["serve", "--root", str(tmp_path / "nope")])
    assert r.exit_code == 2 and "no such directory" in r.output


@pytest.mark.parametrize("argv", [["--port", "0"], ["--port", "70000"], ["--port", "abc"],
                                  ["--host", "no such host.invalid"], ["--max-games", "0"],
                                  ["--time", "nan"], ["--time", "0"], ["--iterations", "-1"],
                                  ["--iterations", "\uff11"], ["--root", "/proc/nope"]])
def test_serve_refuses_bad_options_in_one_line(argv):
    r = CliRunner().invoke(cli, ["serve", *argv])
    assert r.exit_code == 2, r.output
    assert "Traceback" not in r.output and r.output.strip().splitlines()[-1].startswith("Error")


def test_serve_prints_its_address_and_serves(tmp_path):
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "descent", "serve", "--port", str(port), "--iterations", "5"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT,
                            env=dict(os.environ, DESCENT_DATA_DIR=str(tmp_path)))
    try:
        line = proc.stdout.readline()
        assert f"http://127.0.0.1:{port}/" in line, line
        for _ in range(200):            # the socket is bound before the line is printed
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/levels", timeout=30) as r:
                    assert [lv["name"] for lv in json.load(r)["levels"]] == list(LEVELS)
                break
            except OSError:
                import time
                time.sleep(0.1)
        else:
            pytest.fail("the server did not answer")
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _start_serve(port, data):
    proc = subprocess.Popen([sys.executable, "-m", "descent", "serve", "--port", str(port), "--iterations", "5"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT,
                            env=dict(os.environ, DESCENT_DATA_DIR=str(data)))
    line = proc.stdout.readline()
    assert f"http://127.0.0.1:{port}/" in line, line
    return proc


def test_kill_9_and_a_restart_keep_the_game_in_progress(tmp_path):
    """The person's game survives the server's `kill -9`: the new server on the same data brings it
    back, from the same address and cookie, at the same ply, and it plays on."""
    import http.cookiejar
    import signal
    port = _free_port()
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))

    def call(method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        for _ in range(300):
            try:
                with opener.open(req, timeout=60) as r:
                    return json.load(r)
            except urllib.error.HTTPError:
                raise
            except OSError:
                import time
                time.sleep(0.1)
        pytest.fail("the server did not answer")

    proc = _start_serve(port, tmp_path)
    try:
        g = call("POST", "/api/new", {"game": "tic_tac_toe", "level": "easy"})
        call("POST", f"/api/game/{g['id']}/move", {"move": "b2"})
        g = call("POST", f"/api/game/{g['id']}/reply")
        assert len(g["record"]) == 2
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    assert (tmp_path / "serve" / "games.sqlite3").is_file()
    proc = _start_serve(port, tmp_path)
    try:
        back = call("GET", f"/api/game/{g['id']}")
        assert back["record"] == g["record"] and back["your_turn"] and not back["over"]
        assert [x["id"] for x in call("GET", "/api/mine")["games"]] == [g["id"]]
        after = call("POST", f"/api/game/{g['id']}/move", {"move": back["moves"][0]["text"]})
        assert after["record"] == g["record"] + [back["moves"][0]["text"]]
    finally:
        proc.terminate()
        proc.wait(timeout=30)
