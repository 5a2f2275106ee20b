"""`descent serve`: (a) the time from starting the server to the first board drawn in headless
Chromium, and (b) the computer moves per second the server sustains with several games at once
(the balanced level with the shipped reversi 6x6 network, at its shipped calibrated budget), with
the latency of another request meanwhile (is the event loop free while games think?), and
(c) in one process, two searches on two threads against one after the other (does the compiled
search leave the GIL?).

(a) per repeat: the browser is started first (not timed); then ``descent serve`` is started as a
subprocess, and the clock runs until the server accepts connections (``listen_s``), the page is
loaded and has read the game list (``page_s``), and, after "New game" with reversi 6x6 at the
balanced level, the board is drawn (``board_s``: loading the network included, the first game of
a fresh server).

(b) per repeat: a fresh ``descent serve`` process; ``--games`` client threads each play games
against it over HTTP (the person's move chosen at random among the legal ones, then ``reply``) for
``--seconds``; counted are the computer's moves (``reply`` answers) per second of the window. A
further thread asks ``GET /api/levels`` every 50 ms and records its latency. The same is run with
one game, for comparison.

Medians over ``--repeats``. The system Chromium and chromedriver are needed for (a) (skipped
without them). ``--only b,c`` reruns some parts and keeps the others' figures in the JSON file.

    .venv/bin/python -m bench.bench_serve --repeats 5 --json bench/results_serve.json
"""
from __future__ import annotations

import argparse
import atexit
import json
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GAME = "reversi(size=6)"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


_DATA = tempfile.mkdtemp(prefix="descent-bench-serve-")   # the servers' games and profiles, not the user's
atexit.register(shutil.rmtree, _DATA, True)


def start_server(port: int, extra=()) -> subprocess.Popen:
    exe = Path(sys.executable).with_name("descent")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "descent"]
    return subprocess.Popen(cmd + ["serve", "--port", str(port), *extra], cwd=ROOT,
                            env=dict(os.environ, DESCENT_DATA_DIR=_DATA),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def wait_listening(port: int, timeout: float = 120.0) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.01)
    raise RuntimeError("the server did not listen")


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def call(url: str, method: str = "GET", body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method,
                                 headers={"Content-Type": "application/json"} if data else {})
    with urllib.request.urlopen(req, timeout=300) as r:
        return json.load(r)


# ---- (a) start to first board ------------------------------------------------------------------

def first_board(repeats: int) -> dict | None:
    chromium, driver_path = shutil.which("chromium") or "/usr/bin/chromium", shutil.which("chromedriver")
    if not (os.access(chromium, os.X_OK) and driver_path):
        print("no chromium/chromedriver: (a) skipped", flush=True)
        return None
    os.environ["SE_OFFLINE"] = "true"
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select, WebDriverWait
    rows = []
    for i in range(repeats):
        opts = webdriver.ChromeOptions()
        opts.binary_location = chromium
        for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
            opts.add_argument(arg)
        driver = webdriver.Chrome(service=Service(executable_path=driver_path), options=opts)
        port = free_port()
        t0 = time.perf_counter()
        proc = start_server(port)
        try:
            wait_listening(port)
            t_listen = time.perf_counter() - t0
            driver.get(f"http://127.0.0.1:{port}/")
            body = lambda d, k: d.find_element(By.TAG_NAME, "body").get_attribute(f"data-{k}")  # noqa: E731
            WebDriverWait(driver, 120).until(lambda d: body(d, "ready") == "1")
            t_page = time.perf_counter() - t0
            Select(driver.find_element(By.ID, "game")).select_by_value(GAME)
            Select(driver.find_element(By.ID, "level")).select_by_value("balanced")
            driver.find_element(By.ID, "new-game").click()
            WebDriverWait(driver, 300).until(lambda d: len(d.find_elements(By.CSS_SELECTOR, ".cell")) == 36)
            t_board = time.perf_counter() - t0
        finally:
            driver.quit()
            stop(proc)
        row = {"listen_s": round(t_listen, 3), "page_s": round(t_page, 3), "board_s": round(t_board, 3)}
        print("(a)", i, row, flush=True)
        rows.append(row)
    return {"repeats": rows, **{f"median_{k}": round(statistics.median(r[k] for r in rows), 3)
                                for k in ("listen_s", "page_s", "board_s")}}


# ---- (b) moves per second ------------------------------------------------------------------------

def throughput(n_games: int, seconds: float, seed: int) -> dict:
    port = free_port()
    proc = start_server(port, ["--max-games", str(max(4, n_games))])
    base = f"http://127.0.0.1:{port}"
    try:
        wait_listening(port)
        # one game first, so that the network is loaded before the clock starts
        g = call(base + "/api/new", "POST", {"game": GAME, "level": "balanced"})
        call(base + f"/api/game/{g['id']}", "DELETE")
        stop_at = [None]
        counts = [0] * n_games
        errors: list[str] = []
        latencies: list[float] = []
        started = threading.Barrier(n_games + 2)

        def player(k: int) -> None:
            rng = random.Random(seed * 1000 + k)
            started.wait()
            while time.perf_counter() < stop_at[0]:
                g = call(base + "/api/new", "POST", {"game": GAME, "level": "balanced"})
                gid = g["id"]
                while not g["over"] and time.perf_counter() < stop_at[0]:
                    if g["your_turn"]:
                        g = call(base + f"/api/game/{gid}/move", "POST", {"move": rng.choice(g["moves"])["text"]})
                    else:
                        g = call(base + f"/api/game/{gid}/reply", "POST")
                        if time.perf_counter() < stop_at[0]:
                            counts[k] += 1
                call(base + f"/api/game/{gid}", "DELETE")

        def prober() -> None:
            started.wait()
            while time.perf_counter() < stop_at[0]:
                t = time.perf_counter()
                call(base + "/api/levels")
                latencies.append(time.perf_counter() - t)
                time.sleep(0.05)

        def guarded(fn, *a):
            try:
                fn(*a)
            except (OSError, urllib.error.URLError, ValueError) as exc:   # reported, not hidden
                errors.append(repr(exc))

        threads = [threading.Thread(target=guarded, args=(player, k)) for k in range(n_games)]
        threads.append(threading.Thread(target=guarded, args=(prober,)))
        for t in threads:
            t.start()
        t0 = time.perf_counter()
        stop_at[0] = t0 + seconds
        started.wait()
        for t in threads:
            t.join()
        lat = sorted(latencies)
        return {"games": n_games, "seconds": seconds, "computer_moves": sum(counts),
                "moves_per_s": round(sum(counts) / seconds, 2),
                "probe_median_ms": round(1000 * statistics.median(lat), 1) if lat else None,
                "probe_p95_ms": round(1000 * lat[int(0.95 * (len(lat) - 1))], 1) if lat else None,
                "probes": len(lat), "errors": errors}
    finally:
        stop(proc)


# ---- (c) the search and the GIL -----------------------------------------------------------------

def threads_against_sequential(repeats: int, moves: int = 12) -> dict:
    """Two games' computer moves (the balanced reversi 6x6 opponent) on two threads at once against
    one after the other, in this process, interleaved: the ratio of wall times is 1 when the searches
    hold the GIL throughout, 0.5 when they run fully in parallel on two free cores. Also the rate of
    a pure-Python counter on the main thread while one search runs, against alone: what the search
    leaves to the event loop's thread."""
    from descent.api import Opponent
    bots = [Opponent(GAME, level="balanced", seed=k) for k in range(2)]

    def play(bot, n):
        rng = random.Random(0)
        done = 0
        while done < n:
            if bot.is_over():
                bot.new_game()
            elif bot.state.to_move == 0:
                bot.push(rng.choice(bot.state.legal_actions_list()))
            else:
                bot.reply()
                done += 1

    def counter(seconds, stop=None):
        n, end = 0, time.perf_counter() + seconds
        while time.perf_counter() < end and not (stop and stop.is_set()):
            n += 1
        return n

    play(bots[0], 2), play(bots[1], 2)         # networks loaded
    ratios, shares, cpu_seq, cpu_par = [], [], [], []
    for _ in range(repeats):
        t, c = time.perf_counter(), time.process_time()
        play(bots[0], moves), play(bots[1], moves)
        seq = time.perf_counter() - t
        cpu_seq.append((time.process_time() - c) / seq)
        threads = [threading.Thread(target=play, args=(b, moves)) for b in bots]
        t, c = time.perf_counter(), time.process_time()
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        par = time.perf_counter() - t
        cpu_par.append((time.process_time() - c) / par)
        alone_t = time.perf_counter()
        alone = counter(1.0) / (time.perf_counter() - alone_t)
        th = threading.Thread(target=play, args=(bots[0], moves))
        th.start()
        t = time.perf_counter()
        n = 0
        while th.is_alive():
            n += counter(0.05)
        beside = n / (time.perf_counter() - t)
        th.join()
        ratios.append(par / seq)
        shares.append(beside / alone)
        print(f"(c) threads/sequential {par / seq:.2f}, counter beside a search {beside / alone:.2f} of alone",
              flush=True)
    return {"moves_per_game": moves, "wall_threads_over_sequential": [round(r, 3) for r in ratios],
            "median_ratio": round(statistics.median(ratios), 3),
            "counter_beside_search_over_alone": [round(s, 3) for s in shares],
            "median_counter_share": round(statistics.median(shares), 3),
            # the cores this process got (CPU seconds per wall second): under 1 sequentially means
            # the machine's other load left it less than one core, and the ratio above says nothing
            # of the GIL then
            "cpu_per_wall_sequential": round(statistics.median(cpu_seq), 3),
            "cpu_per_wall_threads": round(statistics.median(cpu_par), 3),
            "load1": os.getloadavg()[0]}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=30.0, help="length of each throughput window")
    ap.add_argument("--games", type=int, default=4, help="concurrent games of (b)")
    ap.add_argument("--only", default="a,b,c", help="parts to run (a, b, c); the others are kept from --json")
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    parts = set(args.only.split(","))
    out = {}
    if args.json and Path(args.json).is_file():     # a rerun of some parts keeps the others
        out = json.loads(Path(args.json).read_text())
    out.update({"date": time.strftime("%Y-%m-%d"), "cores": os.cpu_count(), "game": GAME, "level": "balanced",
                "load1_before": os.getloadavg()[0]})
    if "a" in parts:
        out["first_board"] = first_board(args.repeats)
        save(out, args.json)
    if "b" in parts:
        rows: dict[int, list] = {args.games: [], 1: []}
        for i in range(args.repeats):             # interleaved, so that both see the same load
            for n in rows:
                row = throughput(n, args.seconds, i)
                print(f"(b) games={n}", i, row, flush=True)
                rows[n].append(row)
        for n, rs in rows.items():
            out[f"throughput_{n}"] = {
                "repeats": rs, "median_moves_per_s": round(statistics.median(r["moves_per_s"] for r in rs), 2),
                "median_probe_ms": round(statistics.median(r["probe_median_ms"] for r in rs), 1),
                "median_probe_p95_ms": round(statistics.median(r["probe_p95_ms"] for r in rs), 1)}
        save(out, args.json)
    if "c" in parts:
        out["threads"] = threads_against_sequential(args.repeats)
    out["load1_after"] = os.getloadavg()[0]
    save(out, args.json)
    print(json.dumps({k: v for k, v in out.items() if not isinstance(v, dict)}, indent=1))


def save(out: dict, path) -> None:
    """Writes the results so far (temporary name, then rename): a run stopped in a later part keeps
    the parts it finished."""
    if path:
        tmp = Path(path).with_suffix(".tmp")
        tmp.write_text(json.dumps(out, indent=1) + "\n")
        tmp.replace(path)


if __name__ == "__main__":
    main()
