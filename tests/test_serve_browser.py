"""`descent serve` in a real browser: the system's headless Chromium driven by Selenium plays a whole
game of tic-tac-toe by clicks, a few moves of breakthrough (two clicks a move), has a bad move
refused, takes a move back, asks a hint, and plays in two tabs at once.

Needs the Debian packages ``chromium`` and ``chromium-driver`` (``apt install chromium
chromium-driver``) and Selenium (the test extra); skips with the reason otherwise. No browser or
driver is ever downloaded: both are given by path, and Selenium Manager is told to stay offline.
"""
import importlib.util
import os
import shutil
import socket
import threading
import time
import urllib.request

import pytest

pytest.importorskip("starlette")
uvicorn = pytest.importorskip("uvicorn")
selenium = pytest.importorskip("selenium", reason="selenium is not installed (pip install -e '.[test]')")

from selenium import webdriver  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402

from descent.web.app import create_app  # noqa: E402


def _find(*names):
    for name in names:
        path = shutil.which(name) or (name if os.path.isabs(name) and os.access(name, os.X_OK) else None)
        if path:
            return path
    return None


CHROMIUM = _find("/usr/bin/chromium", "chromium", "chromium-browser")
DRIVER = _find("/usr/bin/chromedriver", "chromedriver")
pytestmark = [pytest.mark.skipif(
    not (CHROMIUM and DRIVER),
    reason="no system Chromium and chromedriver (apt install chromium chromium-driver); "
           "this test never downloads a browser"),
    pytest.mark.usefixtures("serve_data_dir")]        # (tests/conftest.py)
WAIT = 180          # seconds: loading a network and the computer's moves on a busy machine


@pytest.fixture(scope="module")
def server(serve_data_dir):
    yield from _serve(create_app(iterations=20))


def _serve(app):
    """The real server (uvicorn) in a thread, on a free port of localhost."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    srv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    for _ in range(600):
        if srv.started:
            break
        time.sleep(0.05)
    assert srv.started, "uvicorn did not start"
    yield f"http://127.0.0.1:{port}"
    srv.should_exit = True
    thread.join(timeout=30)


@pytest.fixture(scope="module")
def browser():
    os.environ["SE_OFFLINE"] = "true"          # Selenium Manager: never fetch a browser or driver
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1200,900", "--disable-extensions", "--no-first-run"):
        opts.add_argument(arg)
    driver = webdriver.Chrome(service=Service(executable_path=DRIVER), options=opts)
    yield driver
    driver.quit()


def body(driver, key):
    return driver.find_element(By.TAG_NAME, "body").get_attribute(f"data-{key}")


def settled(driver):
    """Wait until no request runs and it is the person's turn or the game is over."""
    WebDriverWait(driver, WAIT).until(
        lambda d: body(d, "busy") == "0" and body(d, "turn") in ("you", "over"))
    return body(driver, "turn")


def start(driver, url, game, side="first", level="balanced", elo=None):
    driver.get(url + "/")
    WebDriverWait(driver, WAIT).until(lambda d: body(d, "ready") == "1")
    Select(driver.find_element(By.ID, "game")).select_by_value(game)
    Select(driver.find_element(By.ID, "level")).select_by_value(level)
    Select(driver.find_element(By.ID, "side")).select_by_value(side)
    if elo is not None:
        box = driver.find_element(By.ID, "elo")
        assert box.is_displayed()
        box.clear()
        box.send_keys(str(elo))
    old = body(driver, "game")
    driver.find_element(By.ID, "new-game").click()
    WebDriverWait(driver, WAIT).until(lambda d: body(d, "game") not in (None, old))
    return settled(driver)


def legal(driver):
    return driver.find_element(By.ID, "legal").get_attribute("textContent").split()


def square(driver, name):
    return driver.find_element(By.CSS_SELECTOR, f'.cell[data-square="{name}"]')


def plies(driver):
    return int(body(driver, "plies"))


def status(driver):
    return driver.find_element(By.ID, "status").text


def error_text(driver):
    e = driver.find_element(By.ID, "error")
    return "" if e.get_attribute("hidden") is not None else e.text


def test_a_whole_game_of_tic_tac_toe_by_clicks(server, browser):
    assert start(browser, server, "tic_tac_toe") == "you"
    assert len(legal(browser)) == 9 and len(browser.find_elements(By.CSS_SELECTOR, ".cell")) == 9
    assert float(square(browser, "a1").get_attribute("y")) > float(square(browser, "a3").get_attribute("y"))
    # a bad move: a square that is taken, clicked, is refused on the page
    square(browser, "b2").click()
    settled(browser)
    assert plies(browser) == 2 and browser.find_elements(By.CSS_SELECTOR, ".last")
    square(browser, "b2").click()
    assert "not a legal move" in error_text(browser) and plies(browser) == 2
    # a bad move typed is refused by the server, with its message
    browser.find_element(By.ID, "move-input").send_keys("z9")
    browser.find_element(By.ID, "move-submit").click()
    WebDriverWait(browser, WAIT).until(lambda d: "malformed" in error_text(d) or "off the" in error_text(d))
    settled(browser)
    assert plies(browser) == 2
    # undo takes back the person's move and the reply
    browser.find_element(By.ID, "undo").click()
    WebDriverWait(browser, WAIT).until(lambda d: plies(d) == 0 and body(d, "busy") == "0")
    assert len(legal(browser)) == 9
    # a hint names a legal move
    browser.find_element(By.ID, "hint").click()
    WebDriverWait(browser, WAIT).until(lambda d: "hint is" in d.find_element(By.ID, "status").text)
    hinted = browser.find_element(By.ID, "status").text.rsplit(" ", 1)[-1].rstrip(".")
    assert hinted in legal(browser)
    # then to the end, by clicks
    while settled(browser) == "you":
        before = plies(browser)
        square(browser, legal(browser)[0]).click()
        WebDriverWait(browser, WAIT).until(lambda d: plies(d) > before or body(d, "turn") == "over")
    result = browser.find_element(By.ID, "result")
    assert result.is_displayed() and result.text
    assert len(browser.find_elements(By.CSS_SELECTOR, "#record li")) == plies(browser) >= 5
    href = browser.find_element(By.ID, "download").get_attribute("href")
    owner = browser.get_cookie("descent_owner")["value"]      # the record is this browser's only
    with urllib.request.urlopen(urllib.request.Request(href, headers={"Cookie": f"descent_owner={owner}"}),
                                timeout=30) as r:
        text = r.read().decode()
    assert '[Game "tic_tac_toe"]' in text and '[Result "*"]' not in text


def play_two_clicks(driver, move):
    """Click a move of breakthrough (``c2c3``): the from-square, then the to-square."""
    before = plies(driver)
    square(driver, move[:2]).click()
    assert driver.find_elements(By.CSS_SELECTOR, ".selected")
    square(driver, move[2:]).click()
    WebDriverWait(driver, WAIT).until(lambda d: plies(d) > before)
    settled(driver)


def test_two_tabs_play_at_once_tic_tac_toe_and_breakthrough(server, browser):
    first = browser.current_window_handle
    assert start(browser, server, "tic_tac_toe") == "you"
    square(browser, "a1").click()
    settled(browser)
    game_a = body(browser, "game")
    browser.switch_to.new_window("tab")
    second = browser.current_window_handle
    assert start(browser, server, "breakthrough(rows=6,cols=6)", side="second") == "you"
    game_b = body(browser, "game")
    assert game_b != game_a and plies(browser) == 1
    # playing second, the board is turned half round: your pieces at the bottom
    assert browser.find_element(By.ID, "board").get_attribute("data-turned") == "1"
    assert float(square(browser, "a1").get_attribute("y")) < float(square(browser, "a6").get_attribute("y"))
    for _ in range(3):
        moves = legal(browser)
        assert moves and all(len(m) == 4 for m in moves)
        play_two_clicks(browser, moves[0])
    assert plies(browser) == 7
    browser.switch_to.window(first)
    assert body(browser, "game") == game_a and plies(browser) == 2
    square(browser, legal(browser)[0]).click()
    settled(browser)
    assert plies(browser) in (3, 4)
    browser.switch_to.window(second)
    assert body(browser, "game") == game_b and plies(browser) == 7
    # a from-square with no move to the clicked square: refused, nothing played
    moves = legal(browser)
    frm = moves[0][:2]
    square(browser, frm).click()
    froms = {m[:2] for m in moves} | {m[2:] for m in moves if m[:2] == frm}
    cells = [c.get_attribute("data-square") for c in browser.find_elements(By.CSS_SELECTOR, ".cell")]
    square(browser, next(c for c in cells if c not in froms)).click()
    assert "No legal move" in error_text(browser) and plies(browser) == 7
    browser.find_element(By.ID, "resign").click()
    WebDriverWait(browser, WAIT).until(lambda d: body(d, "turn") == "over")
    assert "resigned" in browser.find_element(By.ID, "result").text
    browser.close()
    browser.switch_to.window(first)


def test_a_game_at_an_elo_the_person_names(browser):
    """Without a fixed budget the page offers the game's rated Elo range; the computer then plays
    the setting nearest to the Elo typed in."""
    from descent import strength
    spec = "reversi(size=6)"
    table = strength.table(spec)
    if table is None:
        pytest.skip(f"no rating table ships for {spec}")
    asked = round((table["settings"][0]["elo"] + table["settings"][-1]["elo"]) / 2)
    for url in _serve(create_app()):
        assert start(browser, url, spec, side="second", level="elo", elo=asked) == "you"
        assert plies(browser) == 1
        pick = strength.level_for_elo(spec, asked)
        elo = f"{'+' if pick['elo'] >= 0 else '-'}{abs(round(pick['elo'])):.0f}"
        assert browser.find_element(By.ID, "opponent").text == f"{spec}: rated setting (Elo {elo})"


# ---- the page keeps your game ---------------------------------------------------------------------

def reloaded(driver):
    """Reload the page and wait until it is back with its game and settled."""
    driver.refresh()
    WebDriverWait(driver, WAIT).until(lambda d: body(d, "ready") == "1")
    return settled(driver)


def test_a_reload_returns_to_the_game_in_progress(server, browser):
    assert start(browser, server, "tic_tac_toe") == "you"
    gid = body(browser, "game")
    assert browser.current_url.endswith(f"/?game={gid}")
    square(browser, "b2").click()
    settled(browser)
    assert plies(browser) == 2
    assert reloaded(browser) == "you"
    assert body(browser, "game") == gid and plies(browser) == 2 and browser.current_url.endswith(f"/?game={gid}")
    assert Select(browser.find_element(By.ID, "game")).first_selected_option.get_attribute("value") == "tic_tac_toe"
    square(browser, legal(browser)[0]).click()
    WebDriverWait(browser, WAIT).until(lambda d: plies(d) >= 3)
    settled(browser)
    # a reload while playing second, with the computer's first move already on the board
    assert start(browser, server, "breakthrough(rows=6,cols=6)", side="second") == "you"
    gid = body(browser, "game")
    assert reloaded(browser) == "you" and body(browser, "game") == gid and plies(browser) == 1
    assert browser.find_element(By.ID, "board").get_attribute("data-turned") == "1"


def test_reloads_take_no_slot_and_a_finished_game_frees_its_own(browser):
    """With --max-games 1: three reloads keep the one game; a second tab is refused while it is in
    progress, and starts once it is resigned; the page's new game closes its old one."""
    for url in _serve(create_app(iterations=5, max_games=1)):
        first = browser.current_window_handle
        assert start(browser, url, "tic_tac_toe") == "you"
        gid = body(browser, "game")
        for _ in range(3):
            assert reloaded(browser) == "you" and body(browser, "game") == gid
        browser.switch_to.new_window("tab")
        browser.get(url + "/")
        WebDriverWait(browser, WAIT).until(lambda d: body(d, "ready") == "1")
        # the start page offers the game in progress; New game is refused, the status says why
        assert browser.find_element(By.ID, "mine").is_displayed()
        browser.find_element(By.ID, "new-game").click()
        WebDriverWait(browser, WAIT).until(lambda d: "New game refused: the one table is taken" in status(d))
        assert "yours" in status(browser) and "Starting" not in status(browser) and not error_text(browser)
        browser.switch_to.window(first)
        browser.find_element(By.ID, "resign").click()
        WebDriverWait(browser, WAIT).until(lambda d: body(d, "turn") == "over")
        browser.close()
        browser.switch_to.window([h for h in browser.window_handles][0])
        browser.find_element(By.ID, "new-game").click()
        WebDriverWait(browser, WAIT).until(lambda d, gid=gid: body(d, "game") not in (None, gid))
        assert settled(browser) == "you"
        second = body(browser, "game")
        # New game on this page closes its game in progress, so the one slot serves the next
        browser.find_element(By.ID, "new-game").click()
        WebDriverWait(browser, WAIT).until(lambda d, second=second: body(d, "game") not in (None, second))
        assert settled(browser) == "you" and not error_text(browser)


def test_a_link_to_a_game_opens_it_only_in_the_browser_that_started_it(server, browser):
    assert start(browser, server, "tic_tac_toe") == "you"
    square(browser, "a1").click()
    settled(browser)
    link, gid = browser.current_url, body(browser, "game")
    browser.switch_to.new_window("tab")          # another tab of the same browser: the same game
    browser.get(link)
    WebDriverWait(browser, WAIT).until(lambda d: body(d, "ready") == "1")
    assert settled(browser) == "you" and body(browser, "game") == gid and plies(browser) == 2
    owner = browser.get_cookie("descent_owner")
    assert owner and owner.get("httpOnly")
    browser.delete_all_cookies()                 # now as another browser would open the link
    try:
        browser.get(link)
        WebDriverWait(browser, WAIT).until(lambda d: body(d, "ready") == "1")
        assert "another browser" in error_text(browser)
        assert body(browser, "game") is None and browser.current_url.rstrip("/") == server
    finally:
        browser.add_cookie({k: owner[k] for k in ("name", "value", "path", "httpOnly") if k in owner})
    browser.close()
    browser.switch_to.window(browser.window_handles[0])


def test_a_reversi_game_counts_the_discs_and_havannah_names_its_cells(server, browser):
    assert start(browser, server, "reversi(size=6)") == "you"
    count = browser.find_element(By.ID, "count")
    assert count.is_displayed() and count.text == "Discs: black (x) 2, white (o) 2."
    assert "black (x)" in browser.find_element(By.ID, "status").text
    if any(o.get_attribute("value") == "havannah(base=4)"
           for o in browser.find_element(By.ID, "game").find_elements(By.TAG_NAME, "option")):
        assert start(browser, server, "havannah(base=4)") == "you"
        names = {t.text for t in browser.find_elements(By.CSS_SELECTOR, "text.coord")}
        assert {"a1", "d4"} <= names and len(names) == 37
        assert not browser.find_element(By.ID, "count").is_displayed()


# ---- what the page says, at every width -------------------------------------------------------------

WIDTHS = (1300, 1024, 390)


def test_the_opponent_in_words_with_more_on_request_and_no_sideways_scrolling(browser):
    """The line under the status is "easy (Elo -735)", what it means behind a click; a level rated
    only from below is "at least" in the menu; at 1300, 1024 and phone width nothing scrolls
    sideways."""
    from descent import strength
    spec = "reversi(size=6)"
    ratings = strength.level_ratings(spec)
    if not ratings:
        pytest.skip(f"no rating table ships for {spec}")
    for url in _serve(create_app()):
        try:
            assert start(browser, url, spec, level="easy") == "you"
            elo = ratings["easy"]["elo"]
            shown = f"Elo {'+' if elo >= 0 else '-'}{abs(round(elo)):.0f}"
            assert browser.find_element(By.ID, "opponent").text == f"{spec}: easy ({shown})"
            more = browser.find_element(By.ID, "opponent-about")
            assert not more.is_displayed()
            browser.find_element(By.CSS_SELECTOR, "#opponent-more summary").click()
            assert more.is_displayed() and "Gaussian difficulty" in more.text and "95% interval" in more.text
            page = browser.find_element(By.TAG_NAME, "body").text
            assert "/checkpoints/" not in page and ".weights.h5" not in page and "base_options" not in page
            options = {o.get_attribute("value"): o.text for o in
                       browser.find_element(By.ID, "level").find_elements(By.TAG_NAME, "option")}
            for lv, e in ratings.items():
                if e.get("at_least"):
                    assert "at least" in options[lv] and "[" not in options[lv], options[lv]
            for width in WIDTHS:
                browser.set_window_size(width, 900)
                WebDriverWait(browser, 10).until(lambda d: d.execute_script("return window.innerWidth") <= width)
                wide, room = browser.execute_script(
                    "return [document.documentElement.scrollWidth, document.documentElement.clientWidth]")
                assert wide <= room, (width, wide, room)
        finally:
            browser.set_window_size(1200, 900)


def test_the_start_page_leads_back_to_the_game_in_progress(server, browser):
    assert start(browser, server, "tic_tac_toe") == "you"
    gid = body(browser, "game")
    square(browser, "b2").click()
    settled(browser)
    browser.get(server + "/")                     # a bookmark of the start page
    WebDriverWait(browser, WAIT).until(lambda d: body(d, "ready") == "1")
    offer = browser.find_element(By.ID, "mine")
    assert offer.is_displayed() and "tic_tac_toe" in offer.text and "2 moves played" in offer.text
    offer.find_element(By.CSS_SELECTOR, f'a[href="/?game={gid}"]').click()
    WebDriverWait(browser, WAIT).until(lambda d: body(d, "game") == gid)
    assert settled(browser) == "you" and plies(browser) == 2
    # the page's New game replaces it: the offer is gone, the old game closed
    old = gid
    browser.find_element(By.ID, "new-game").click()
    WebDriverWait(browser, WAIT).until(lambda d: body(d, "game") not in (None, old))
    settled(browser)
    browser.get(server + "/")
    WebDriverWait(browser, WAIT).until(lambda d: body(d, "ready") == "1")
    links = [a.get_attribute("href") for a in browser.find_elements(By.CSS_SELECTOR, "#mine a")]
    assert not any(old in h for h in links)


def test_a_restarted_server_brings_the_game_back_in_the_browser(browser, tmp_path):
    """The server stops (its games in memory lost) and a new one starts on the same games file: the
    page's address brings the game back at the same ply, and it plays on."""
    db = tmp_path / "games.sqlite3"
    for url in _serve(create_app(iterations=5, store=db)):
        assert start(browser, url, "tic_tac_toe") == "you"
        square(browser, "b2").click()
        settled(browser)
        gid, record = body(browser, "game"), plies(browser)
    for url in _serve(create_app(iterations=5, store=db)):   # another port: the cookie is the host's
        browser.get(f"{url}/?game={gid}")
        WebDriverWait(browser, WAIT).until(lambda d: body(d, "ready") == "1")
        assert settled(browser) == "you" and body(browser, "game") == gid and plies(browser) == record == 2
        square(browser, legal(browser)[0]).click()
        WebDriverWait(browser, WAIT).until(lambda d: plies(d) >= 3)
        assert not error_text(browser)


# ---- a game that is not built in: the generic grid (descent/web/grid.py) --------------------------

def test_a_plugin_game_by_clicks_in_its_columns_and_a_game_of_unknown_geometry_by_its_move_list(browser):
    """`descent serve --game`: the worked example's Connect Four (a plugin, no network) is drawn as a
    grid of its planes' size, and a click anywhere in a column drops a stone to the bottom of it;
    a game whose drawing gives no grid (OpenSpiel's pentago) is played from the list of its moves."""
    c4 = "examples.connect_four:ConnectFour"
    named = [c4] + (["openspiel:pentago"] if importlib.util.find_spec("pyspiel") else [])
    for url in _serve(create_app(iterations=20, named=named)):
        browser.get(url + "/")
        WebDriverWait(browser, WAIT).until(lambda d: body(d, "ready") == "1")
        option = browser.find_element(By.CSS_SELECTOR, f'#game option[value="{c4}"]')
        assert option.is_selected() and "no network" in option.text     # the named game comes first
        assert start(browser, url, c4) == "you"
        assert len(browser.find_elements(By.CSS_SELECTOR, ".sq.plain")) == 42
        square(browser, "d6").click()          # the top of column d: the stone lands on d1
        WebDriverWait(browser, WAIT).until(lambda d: plies(d) >= 2)
        assert settled(browser) == "you" and not error_text(browser)
        assert square(browser, "d1").get_attribute("data-piece") == "x"
        assert browser.find_element(By.ID, "record").text.split()[0] == "d"
        for column in "abcdefgabcdefgabcdefg":      # play on by clicks until the game ends
            if settled(browser) == "over":
                break
            if column in legal(browser):
                before = plies(browser)
                square(browser, f"{column}6").click()
                WebDriverWait(browser, WAIT).until(lambda d, n=before: plies(d) > n)
        assert settled(browser) == "over" and browser.find_element(By.ID, "result").text
        if len(named) > 1:
            assert start(browser, url, "openspiel:pentago") == "you"
            listed = Select(browser.find_element(By.ID, "move-list"))
            assert len(listed.options) == len(legal(browser)) == 288
            listed.select_by_value("c3t")
            browser.find_element(By.ID, "play-listed").click()
            WebDriverWait(browser, WAIT).until(lambda d: plies(d) >= 2)
            assert browser.find_element(By.ID, "record").text.split()[0] == "c3t"
            assert browser.find_element(By.ID, "drawing-box").get_attribute("open") is not None
