"""Strength against a ladder nobody here wrote: checkpoints against fixed MCTS rungs.

For a game OpenSpiel has at the size we train, the ladder is OpenSpiel's own C++ MCTS bot
(``pyspiel.MCTSBot`` with a ``pyspiel.RandomRolloutEvaluator``: 1 random rollout per leaf, UCT
constant 2, solver on, 1000 MB; the settings of OpenSpiel's ``mcts_example``) at fixed simulation
counts. Its moves are translated into ours and back at every ply, both engines advance in lockstep,
and every ply checks that both engines have the same player to move and the same set of legal
moves, that they end together and name the same winner (``LadderMismatch`` otherwise: it fails
loudly, nothing is scored). Where OpenSpiel lacks the size (reversi 6x6: OpenSpiel's othello is
8x8 only), the ladder is this project's MCTS (``mcts:iterations=N``, random playouts).

Sizes (checked by the differential tests ``tests/test_breakthrough.py`` and
``tests/test_havannah.py::test_against_open_spiel``, which compare the legal moves at every ply):
- ``breakthrough(rows=6,cols=6)`` = OpenSpiel ``breakthrough(rows=6,columns=6)``; OpenSpiel's first
  player starts on the top rows, so the move text's rows are mirrored.
- ``havannah(base=4)`` = OpenSpiel ``havannah(board_size=4,swap=true)``: OpenSpiel's ``board_size``
  is the number of cells on a side (its board is ``2*board_size-1`` = 7 cells across and it has
  7 x 7 = 49 action ids), our ``base`` likewise; the action ids are the same, except the swap, which
  OpenSpiel plays by choosing the occupied cell and we by the extra action ``swap``.

Players: the checkpoints, each as ``--agent`` with ``net=PATH`` (default Unbounded Minimax,
``minimax:iterations=40``), and the rungs. Every pair plays ``--games`` games, seats alternating.
Rungs also play their neighbours (``--rung-games``), so that the Elo scale is the ladder's own
(bridge rungs between the ones the checkpoints play, ``--net-rungs``, keep neighbours close enough
for their games not to be all won or all lost):
Bradley-Terry ratings (``descent.ratings.fit``, draws half a win) over all games of a game, shifted
so that the weakest rung (100 simulations) is Elo 0, with 95% intervals from a bootstrap of games
within each pair. A checkpoint that wins every game keeps a finite rating through the fit's small
ridge: read it as "at least".

Results go to ``--json`` (default ``research/results_ladder.json``); games already recorded there are
not played again, so a killed run reruns with the same command. Written atomically after every
batch. Usage:

    python -m research.ladder --game 'breakthrough(rows=6,cols=6)' \\
        --checkpoints results/training-runs/breakthrough-6x6/checkpoints.json --rungs 100,1000,10000
    python -m research.ladder --report          # table, figures, no games

``--checkpoints`` is a JSON list of {"label", "path", "cpu_hours", "games", "examples"} (the files
``results/training-runs/<game>/checkpoints.json``); ``--net LABEL=PATH`` adds one without metadata.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import platform
import random
import re
import sys
import time
import zlib


HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DEFAULT_JSON = os.path.join(HERE, "results_ladder.json")

# OpenSpiel's mcts_example defaults
OS_UCT_C = 2.0
OS_ROLLOUTS = 1
OS_MAX_MB = 1000
OS_SOLVE = True

# our spec -> (OpenSpiel game name, parameters) or None (ladder: this project's MCTS)
OPENSPIEL = {
    "breakthrough(rows=6,cols=6)": ("breakthrough", {"rows": 6, "columns": 6}),
    "havannah(base=4)": ("havannah", {"board_size": 4, "swap": True}),
    "havannah(base=5)": ("havannah", {"board_size": 5, "swap": True}),
    "havannah(base=6)": ("havannah", {"board_size": 6, "swap": True}),
    "havannah(base=8)": ("havannah", {"board_size": 8, "swap": True}),
    "reversi(size=6)": None,
}
SLUGS = {"breakthrough(rows=6,cols=6)": "breakthrough-6x6", "havannah(base=4)": "havannah-base4",
         "havannah(base=5)": "havannah-base5-ladder", "havannah(base=6)": "havannah-base6-ladder",
         "havannah(base=8)": "havannah-base8", "reversi(size=6)": "reversi-6x6"}


class LadderMismatch(RuntimeError):
    """The two engines disagree (legal moves, player to move, end or winner): nothing is scored."""


# ---- move translation ----------------------------------------------------------------------------

def _flip_square(name: str, rows: int) -> str:
    return name[0] + str(rows + 1 - int(name[1:]))


def breakthrough_os_to_ours(text: str, rows: int) -> str:
    """OpenSpiel's breakthrough move text ('a5b4', a capture suffixed '*') in our notation: OpenSpiel's
    first player starts on the top rows, ours on the bottom, so the row numbers are mirrored."""
    t = text.rstrip("*")
    k = 1 + next(i for i, ch in enumerate(t[1:]) if ch.isalpha())
    return _flip_square(t[:k], rows) + _flip_square(t[k:], rows)


def legal_map(spec: str, ours, ref) -> dict:
    """{our action: OpenSpiel action} for the position both engines are in, after checking that
    they agree on the player to move and on the legal moves (``LadderMismatch`` otherwise)."""
    where = f"{spec} at ply {ours.ply} ({ours.position()})"
    if ref.current_player() != ours.to_move:
        raise LadderMismatch(f"{where}: OpenSpiel has player {ref.current_player()} to move, we have "
                             f"{ours.to_move}")
    os_legal = list(ref.legal_actions())
    mine = ours.legal_actions_list()
    if spec.startswith("breakthrough"):
        rows = ours.game.params["rows"]
        by_text = {}
        for a in os_legal:
            by_text[breakthrough_os_to_ours(ref.action_to_string(ref.current_player(), a), rows)] = a
        mapping = {}
        for a in mine:
            text = ours.move_to_str(a)
            if text not in by_text:
                raise LadderMismatch(f"{where}: our move {text} is not legal in OpenSpiel")
            mapping[a] = by_text[text]
    elif spec.startswith("havannah"):
        swap_id = ours.game.num_actions - 1
        first = ours.move_stack[0] if ours.ply == 1 else None
        mapping = {a: (first if a == swap_id else a) for a in mine}
    else:
        raise LadderMismatch(f"{spec}: no translation to OpenSpiel")
    if sorted(mapping.values()) != sorted(os_legal) or len(set(mapping.values())) != len(mapping):
        raise LadderMismatch(f"{where}: legal moves differ: ours {sorted(mapping.values())}, "
                             f"OpenSpiel {sorted(os_legal)}")
    return mapping


def _os_winner(ref):
    r = ref.returns()
    return None if r[0] == r[1] else (0 if r[0] > r[1] else 1)


# ---- players -------------------------------------------------------------------------------------

def player_label_kind(label: str) -> str:
    return "rung" if label.startswith("mcts") else "net"


class _OSBot:
    """OpenSpiel's C++ MCTS bot, a fresh one per game (seeded)."""

    def __init__(self, os_game, sims: int):
        self.os_game, self.sims, self.bot = os_game, sims, None

    def reset(self, seed: int):
        import pyspiel
        ev = pyspiel.RandomRolloutEvaluator(OS_ROLLOUTS, seed)
        self.bot = pyspiel.MCTSBot(self.os_game, ev, OS_UCT_C, self.sims, OS_MAX_MB, OS_SOLVE, seed, False)

    def choose_os(self, ref) -> int:
        return self.bot.step(ref)


class _Worker:
    """The per-process cache of agents and OpenSpiel games. ``make_agent(spec, game)``: how agents
    are built (default ``descent.networks.make_agent``; tests pass one with a test network)."""

    def __init__(self, make_agent=None):
        self.agents, self.os_games = {}, {}
        self.make_agent = make_agent

    def os_game(self, spec):
        if spec not in self.os_games:
            import pyspiel
            name, params = OPENSPIEL[spec]
            self.os_games[spec] = pyspiel.load_game(name, params)
        return self.os_games[spec]

    def build(self, agent: str, spec: str):
        if self.make_agent is None:
            from descent.networks import make_agent
            self.make_agent = make_agent
        return self.make_agent(agent, spec)

    def player(self, spec: str, player: dict):
        key = (spec, player["label"])
        if key not in self.agents:
            if player["kind"] == "rung" and "agent" not in player:
                self.agents[key] = _OSBot(self.os_game(spec), player["sims"])
            else:
                self.agents[key] = self.build(player["agent"], spec)
        return self.agents[key]

    def fresh(self, spec: str, player: dict, table_mb: float):
        """A player for one game among others in flight: OpenSpiel's bot and agents without a
        network built anew (cheap), a best-first agent with a network forked from the cached one
        (its network shared, its own search, its table capped at ``table_mb``)."""
        from descent import batched
        proto = self.player(spec, player)
        if isinstance(proto, _OSBot):
            return _OSBot(proto.os_game, proto.sims)
        if batched.steppable(proto):
            return batched.fork(proto, table_mb)
        return self.build(player["agent"], spec)


_WORKER = None


def _worker() -> _Worker:
    global _WORKER
    if _WORKER is None:
        _WORKER = _Worker()
    return _WORKER


def play_game(spec: str, a: dict, b: dict, a_seat: int, seed: int, opening_plies: int = 0,
              opening_seed: int = 0) -> dict:
    """One game of player ``a`` (seat ``a_seat``) against ``b``; the score is ``a``'s (1, 1/2, 0).
    With an OpenSpiel player both engines advance together and are checked at every ply. The first
    ``opening_plies`` plies are uniformly random moves drawn from ``opening_seed`` (give both seats
    of a pairing the same seed: deterministic players would otherwise replay one game per seat).
    ``game_steps`` run alone (each move chosen at once)."""
    from descent import batched
    w = _worker()
    rec, _ = batched.run_one(game_steps(spec, w, w.player(spec, a), w.player(spec, b), a_seat, seed,
                                        opening_plies, opening_seed, batch=False))
    return rec


def game_steps(spec: str, worker: _Worker, pa, pb, a_seat: int, seed: int, opening_plies: int = 0,
               opening_seed: int = 0, batch: bool = True):
    """``play_game`` as a coroutine for ``descent.batched.drive`` (our agents' moves through
    ``descent.batched.move``: a best-first agent with a network is stepped by the driver, one network
    call per round across the games in flight). Returns the record and the time of the two players'
    moves (with games in flight, each move's own clock: its steps and its share of the calls)."""
    import games
    from descent import batched
    for i, p in enumerate((pa, pb)):
        p.reset(seed * 2 + i)
    uses_os = isinstance(pa, _OSBot) or isinstance(pb, _OSBot)
    ours = games.new_state(spec)
    ref = worker.os_game(spec).new_initial_state() if uses_os else None
    by_seat = {a_seat: pa, 1 - a_seat: pb}
    rng, opening = random.Random(opening_seed), []
    clock = 0.0
    for _ in range(opening_plies):
        if ours.is_game_over():
            break
        action = rng.choice(sorted(ours.legal_actions_list()))
        if ref is not None:
            ref.apply_action(legal_map(spec, ours, ref)[action])
        ours.push(action)
        opening.append(int(action))
    while True:
        over = ours.is_game_over()
        if ref is not None and ref.is_terminal() != over:
            raise LadderMismatch(f"{spec} at ply {ours.ply}: game over in {'ours' if over else 'OpenSpiel'} "
                                 f"only ({ours.position()})")
        if over:
            break
        p = by_seat[ours.to_move]
        if isinstance(p, _OSBot):
            t0 = time.perf_counter()
            mapping = legal_map(spec, ours, ref)
            os_action = p.choose_os(ref)
            clock += time.perf_counter() - t0
            back = [k for k, v in mapping.items() if v == os_action]
            if len(back) != 1:
                raise LadderMismatch(f"{spec} at ply {ours.ply}: OpenSpiel's move {os_action} has no "
                                     f"legal twin here")
            action = back[0]
        else:
            action, dt = yield from batched.move(p, ours, batch)
            clock += dt
            if ref is not None:
                mapping = legal_map(spec, ours, ref)
                if action not in mapping:
                    raise LadderMismatch(f"{spec} at ply {ours.ply}: our move {action} is not legal")
                os_action = mapping[action]
        ours.push(action)
        if ref is not None:
            ref.apply_action(os_action)
    winner = ours.outcome().winner
    if ref is not None and _os_winner(ref) != winner:
        raise LadderMismatch(f"{spec}: the winners differ: ours {winner}, OpenSpiel {_os_winner(ref)} "
                             f"({ours.position()})")
    score = 0.5 if winner is None else (1.0 if winner == a_seat else 0.0)
    rec = {"score": score, "a_seat": a_seat, "plies": ours.ply, "winner": winner}
    if opening_plies:
        rec["opening"] = opening
    return rec, clock


def _task(args):
    """One task alone: ``(a's label, b's label, record)``."""
    return next(play_tasks([args], 1))


DEFAULT_IN_FLIGHT = 16


def play_tasks(tasks, in_flight: int = DEFAULT_IN_FLIGHT, worker: _Worker | None = None,
               memory_mb: float | None = None):
    """Play the tasks (``schedule``'s tuples) in this process, ``in_flight`` games at a time with
    one network call per network and round across them (``descent.batched.drive``); yield
    ``(a's label, b's label, record)`` as each game ends. Where the players cannot share the driver
    (``descent.batched.batchable``: an agent with a network that is not a best-first agent's), the
    games are played one at a time."""
    from descent import batched
    tasks = list(tasks)
    w = worker or _worker()
    specs = [p["agent"] for t in tasks for p in (t[1], t[2]) if "agent" in p]
    if not batched.batchable(specs):
        in_flight = 1
    in_flight = max(1, min(in_flight, len(tasks)))
    table_mb = batched.table_share(memory_mb or batched.DEFAULT_MEMORY_MB, 2 * in_flight)

    def start(task):
        spec, a, b, index, seed, *opening = task
        if in_flight == 1:
            pa, pb = w.player(spec, a), w.player(spec, b)
        else:
            pa, pb = w.fresh(spec, a, table_mb), w.fresh(spec, b, table_mb)
        return game_steps(spec, w, pa, pb, index % 2, seed, *opening)

    for task, (rec, clock) in batched.drive(((t, lambda t=t: start(t)) for t in tasks), in_flight):
        rec.update(index=task[3], seconds=round(clock, 3))
        yield task[1]["label"], task[2]["label"], rec


def _chunk(args):
    tasks, in_flight = args
    return list(play_tasks(tasks, in_flight))


# ---- the schedule and the results file -------------------------------------------------------------

def rung_player(spec: str, token) -> dict:
    """The rung ``token`` of ``--rungs``: ``N`` is the game's ladder engine at N simulations
    (OpenSpiel's MCTS where OpenSpiel has the game, else ours); ``ours:N`` is this project's MCTS at N
    iterations also where OpenSpiel has the game (label ``mctsN-ours``): rungs above OpenSpiel's that
    stay affordable (ours plays 10,000 iterations of breakthrough 6x6 in 18 ms, OpenSpiel's in ~0.3 s),
    tied to OpenSpiel's scale by the games between neighbouring rungs."""
    text = str(token).strip()
    ours = text.startswith("ours:")
    try:
        sims = int(text[5:] if ours else text)
    except ValueError:
        raise SystemExit(f"error: rung {text!r} is not N or ours:N") from None
    if OPENSPIEL.get(spec) and not ours:
        return {"label": f"mcts{sims}", "kind": "rung", "sims": sims,
                "engine": f"OpenSpiel MCTSBot, {sims} simulations, random rollouts"}
    label = f"mcts{sims}-ours" if OPENSPIEL.get(spec) else f"mcts{sims}"
    return {"label": label, "kind": "rung", "sims": sims, "agent": f"mcts:iterations={sims}",
            "engine": f"this project's MCTS (mcts:iterations={sims}), random playouts"}


def rung_token(label: str, sims: int) -> str:
    """The ``--rungs`` token of the rung labelled ``label`` (``rung_player``'s inverse)."""
    return f"ours:{sims}" if label.endswith("-ours") else str(sims)


def _rung_order(p: dict):
    """Rungs by strength: simulations, the outside engine before ours at equal counts."""
    return p["sims"], "agent" in p


def net_player(label: str, path: str, agent: str, meta: dict | None = None) -> dict:
    sep = "," if ":" in agent else ":"
    p = {"label": label, "kind": "net", "path": path, "agent": f"{agent}{sep}net={path}"}
    for k in ("cpu_hours", "games", "examples", "train_seconds", "milestone"):
        if meta and k in meta:
            p[k] = meta[k]
    return p


def pair_key(a: str, b: str) -> str:
    return f"{a}|{b}"


def load_results(path: str) -> dict:
    if os.path.exists(path):
        with open(path) as f:
            return json.load(f)
    return {"games": {}}


def results_lock(path: str) -> str:
    """The lock of a results file (in bench/results/, which is not tracked)."""
    return os.path.join(os.path.dirname(os.path.abspath(path)), "results", os.path.basename(path) + ".lock")


def save_results(path: str, data: dict) -> None:
    """Merge ``data`` into the file (games recorded by another run of this script since it was read
    are kept: two games can be laddered at once) and write it atomically; ``data`` becomes the
    merged record."""
    from training import fileio
    with fileio.FileLock(results_lock(path), timeout=None):
        disk = load_results(path)
        for spec, entry in data["games"].items():
            old = disk["games"].get(spec)
            if old is None:
                continue
            for label, p in old["players"].items():
                entry["players"].setdefault(label, p)
            for key, recs in old["matches"].items():
                mine = entry["matches"].setdefault(key, [])
                have = {r["index"] for r in mine}
                mine.extend(r for r in recs if r["index"] not in have)
                mine.sort(key=lambda r: r["index"])
        for spec, entry in disk["games"].items():
            data["games"].setdefault(spec, entry)
        fileio.write_json(path, data)


def seed_of(spec: str, a: str, b: str, index: int) -> int:
    return zlib.crc32(f"{spec}|{a}|{b}|{index}".encode()) & 0x3FFFFFFF   # seed * 2 + 1 fits an int32


def opening_seed(spec: str, index: int) -> int:
    """The random opening of game ``index``: the same for both seats (index // 2) and for every pair."""
    return zlib.crc32(f"{spec}|opening|{index // 2}".encode())


def schedule(entry: dict, spec: str, pairs, n_games: int, opening_plies: int = 0):
    tasks = []
    for a, b in pairs:
        done = {r["index"] for r in entry["matches"].get(pair_key(a["label"], b["label"]), [])}
        for i in range(n_games):
            if i not in done:
                task = (spec, a, b, i, seed_of(spec, a["label"], b["label"], i))
                tasks.append(task + ((opening_plies, opening_seed(spec, i)) if opening_plies else ()))
    return tasks


def run_tasks(path: str, data: dict, spec: str, tasks, workers: int,
              in_flight: int = DEFAULT_IN_FLIGHT) -> None:
    """Play the tasks in ``workers`` spawned processes, each playing chunks of ``in_flight`` games at
    a time (``play_tasks``); records are saved as chunks come back (a killed run loses at most the
    games in flight, and a rerun does not play the saved ones again)."""
    entry = data["games"][spec]
    if not tasks:
        return
    print(f"{spec}: {len(tasks)} game(s) to play on {workers} worker(s), {in_flight} in flight each",
          flush=True)
    last_save = time.monotonic()
    ctx = mp.get_context("spawn")
    done = 0
    chunks = [(tasks[i:i + in_flight], in_flight) for i in range(0, len(tasks), in_flight)]
    with ctx.Pool(min(workers, len(chunks)), maxtasksperchild=None) as pool:
        for recs in pool.imap_unordered(_chunk, chunks):
            for a, b, rec in recs:
                entry["matches"].setdefault(pair_key(a, b), []).append(rec)
                done += 1
            if time.monotonic() - last_save > 20 or done == len(tasks):
                entry["matches"][pair_key(a, b)].sort(key=lambda r: r["index"])
                save_results(path, data)
                last_save = time.monotonic()
                print(f"  {done}/{len(tasks)} ({a} vs {b}: {rec['score']})", flush=True)
    for k in entry["matches"]:
        entry["matches"][k].sort(key=lambda r: r["index"])
    save_results(path, data)


# ---- ratings --------------------------------------------------------------------------------------

def elo_table(entry: dict, boot: int = 500, seed: int = 0) -> dict:
    """Bradley-Terry Elo of every player of one game, the weakest rung at 0, with bootstrap 95%
    intervals (games resampled within each pair)."""
    from descent.ratings import elo_intervals
    labels = list(entry["players"])
    idx = {l: i for i, l in enumerate(labels)}
    rungs = sorted((p for p in entry["players"].values() if p["kind"] == "rung"), key=_rung_order)
    anchor = idx[entry["anchor"]] if entry.get("anchor") in idx else idx[rungs[0]["label"]]
    pairs = [(idx[k.split("|")[0]], idx[k.split("|")[1]], [r["score"] for r in v])
             for k, v in entry["matches"].items() if v]
    if not pairs:
        return {}
    elo = elo_intervals(len(labels), pairs, anchor, boot, seed)
    played = {l for k in entry["matches"] for l in k.split("|")}
    return {l: {"elo": elo[i][0], "lo": elo[i][1], "hi": elo[i][2]} for l, i in idx.items() if l in played}


def pair_rows(entry: dict) -> list[dict]:
    from descent.stats import cluster_interval
    rows = []
    for k, recs in entry["matches"].items():
        if not recs:
            continue
        a, b = k.split("|")
        scores = [r["score"] for r in recs]
        ci = cluster_interval(scores, lo=0.0, hi=1.0)
        rows.append({"a": a, "b": b, "games": len(scores), "score": round(ci.mean, 4),
                     "low": round(ci.low, 4), "high": round(ci.high, 4),
                     "wins": sum(s == 1 for s in scores), "draws": sum(s == 0.5 for s in scores),
                     "losses": sum(s == 0 for s in scores),
                     "seconds_per_game": round(sum(r["seconds"] for r in recs) / len(recs), 2)})
    return rows


def report(data: dict, figures: str | None) -> str:
    out = []
    for spec, entry in data["games"].items():
        entry["elo"] = elo_table(entry)
        entry["pairs"] = pair_rows(entry)
        out.append(f"\n### {spec}\n\nLadder: {entry['ladder']}. Anchor: {entry['anchor']} = Elo 0. "
                   f"Checkpoints play `{entry['agent']}`.\n")
        played = [r for r in _rungs(entry) if any(k.endswith("|" + r["label"]) and not k.startswith("mcts")
                                                   for k in entry["matches"])]
        out.append("| checkpoint | CPU-hours | games | examples | " +
                   " | ".join(f"score vs {p['label']}" for p in played) + " | Elo [95%] |")
        out.append("|---" * (5 + len(played)) + "|")
        for p in _nets(entry):
            cells = []
            for r in played:
                row = next((x for x in entry["pairs"] if x["a"] == p["label"] and x["b"] == r["label"]), None)
                cells.append("—" if row is None else
                             f"{row['score']:.2f} [{row['low']:.2f}, {row['high']:.2f}] ({row['games']})")
            e = entry["elo"].get(p["label"])
            elo = "—" if e is None else f"{e['elo']:+.0f} [{e['lo']:+.0f}, {e['hi']:+.0f}]"
            out.append(f"| {p['label']} | {_num(p.get('cpu_hours'), 3)} | {_num(p.get('games'))} | "
                       f"{_num(p.get('examples'))} | " + " | ".join(cells) + f" | {elo} |")
        rr = [x for x in entry["pairs"] if x["a"].startswith("mcts")]
        if rr:
            out.append("\nRungs: " + "; ".join(
                f"{x['a']} vs {x['b']} {x['score']:.2f} [{x['low']:.2f}, {x['high']:.2f}] ({x['games']} games)"
                for x in rr) + ". Rung Elo: " + ", ".join(
                f"{r['label']} {entry['elo'][r['label']]['elo']:+.0f}" for r in _rungs(entry)
                if r["label"] in entry["elo"]) + ".")
    if figures:
        _figures(data, figures)
    return "\n".join(out)


def _num(x, digits=None):
    if x is None:
        return "—"
    if digits is not None:
        return f"{x:.{digits}f}"
    return f"{x:,}"


def _rungs(entry):
    return sorted((p for p in entry["players"].values() if p["kind"] == "rung"), key=_rung_order)


def _nets(entry):
    return sorted((p for p in entry["players"].values() if p["kind"] == "net"),
                  key=lambda p: (p.get("cpu_hours") or 0, p["label"]))


def unbeaten_bounds(entry: dict) -> dict:
    """{checkpoint label: Elo of the strongest rung it played} for every checkpoint that won all its
    games against rungs (its own fitted Elo only reflects the fit's ridge)."""
    out = {}
    for p in _nets(entry):
        rows = [x for x in entry.get("pairs", []) if x["a"] == p["label"] and x["b"] in entry["elo"]
                and entry["players"].get(x["b"], {}).get("kind") == "rung"]
        if rows and all(x["score"] == 1.0 for x in rows):
            out[p["label"]] = max(entry["elo"][x["b"]]["elo"] for x in rows)
    return out


def _figures(data: dict, folder: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    os.makedirs(folder, exist_ok=True)
    specs = list(data["games"])
    fig, axes = plt.subplots(1, len(specs), figsize=(5 * len(specs), 4), squeeze=False)
    for ax, spec in zip(axes[0], specs):
        entry = data["games"][spec]
        nets = [p for p in _nets(entry) if p["label"] in entry["elo"] and p.get("cpu_hours") is not None]
        def line(p):          # one line per training run (its folder) and member
            parts = os.path.normpath(p.get("path", "")).split(os.sep)
            run = parts[parts.index("training-runs") + 1] if "training-runs" in parts[:-1] else ""
            return run, p.get("member", 0)
        lines = sorted({line(p) for p in nets})
        bound = unbeaten_bounds(entry)
        for run, m in lines:
            pts = sorted((p for p in nets if line(p) == (run, m)), key=lambda p: p["cpu_hours"])
            # an unbeaten checkpoint's fitted Elo is the fit's ridge: draw it at the strongest rung it
            # beat, as a lower bound (an open triangle, no interval)
            rated = [p for p in pts if p["label"] not in bound]
            y = [entry["elo"][p["label"]]["elo"] for p in rated]
            lo = [y[i] - entry["elo"][p["label"]]["lo"] for i, p in enumerate(rated)]
            hi = [entry["elo"][p["label"]]["hi"] - y[i] for i, p in enumerate(rated)]
            name = f"{run}, member {m}" if len({r for r, _ in lines}) > 1 else f"member {m}"
            bar = ax.errorbar([p["cpu_hours"] for p in rated], y, yerr=[lo, hi], marker="o", capsize=3, label=name)
            up = [(p["cpu_hours"], bound[p["label"]]) for p in pts if p["label"] in bound]
            if up:
                ax.plot(*zip(*up), ls="none", marker="^", ms=11, mfc="white", color=bar[0].get_color(),
                        label="unbeaten: at least this" if (run, m) == lines[0] else None)
        played = {k.split("|")[1] for k in entry["matches"] if not k.startswith("mcts")}
        for r in _rungs(entry):
            if r["label"] in entry["elo"]:
                e = entry["elo"][r["label"]]["elo"]
                main_rung = r["label"] in played
                ax.axhline(e, color="grey", ls=":" if main_rung else (0, (1, 4)), lw=1 if main_rung else 0.6)
                if main_rung:
                    ax.text(ax.get_xlim()[1], e, f"{r['label']} ", va="bottom", ha="right", fontsize=8,
                            color="grey")
        ax.set_title(spec)
        ax.set_xlabel("CPU-hours of training")
        ax.set_ylabel(f"Elo ({entry['anchor']} = 0; dotted: rungs)")
        if nets:
            ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(folder, "ladder_elo_cpu_hours.png"), dpi=110)
    plt.close(fig)


def card_rating(entry: dict, label: str) -> dict:
    """A checkpoint's rating as its model card holds it: the fit's Elo with its interval, or, for a
    checkpoint that won every ladder game (the fit then only says "above the top rung"), the rating
    of the strongest rung it beat as a lower bound (``at_least``, no upper end)."""
    scores = {x["b"]: x["score"] for x in entry["pairs"] if x["a"] == label}
    if scores and all(s >= 1.0 for s in scores.values()):
        top = max(scores, key=lambda k: int(re.sub(r"\D", "", k) or 0))
        r = entry["elo"][top]["elo"]
        return {"elo": r, "low": r, "high": None, "at_least": True}
    e = entry["elo"][label]
    return {"elo": e["elo"], "low": e["lo"], "high": e["hi"]}


def fill_cards(data: dict, echo=print) -> int:
    """Write each shipped network's Elo (and the measured CPU-hours of its checkpoint) into its model
    card (``checkpoints/shipped/<game>/card.json``), matching networks by the sha256 of their
    weights; returns the number of networks filled."""
    from descent import shipped
    from training import fileio
    filled = 0
    for spec, entry in data["games"].items():
        found = shipped.find(spec)
        if found is None:
            continue
        d, card = found
        by_sha = {}
        for p in entry["players"].values():
            if p["kind"] == "net" and os.path.isfile(os.path.join(ROOT, p["path"])):
                by_sha[shipped.sha256(os.path.join(ROOT, p["path"]))] = p
        for role, net in card["networks"].items():
            p = by_sha.get(net["sha256"])
            if p is None or p["label"] not in entry.get("elo", {}):
                continue
            scores = {x["b"]: [x["score"], x["low"], x["high"], x["games"]] for x in entry["pairs"]
                      if x["a"] == p["label"]}
            net["elo"] = {**card_rating(entry, p["label"]), "anchor": f"{entry['anchor']} = 0",
                          "ladder": entry["ladder"], "agent": entry["agent"], "scores": scores,
                          "source": "research/results_ladder.json (research/ladder.py)"}
            if p.get("cpu_hours") is not None:
                net["cpu_hours"] = p["cpu_hours"]       # measured: user+sys of the training process tree
            filled += 1
        fileio.write_json(d / shipped.CARD_FILE, card)
        shipped.verify(d)
        echo(f"{spec}: Elo written into {d / shipped.CARD_FILE}")
    return filled


# ---- main -----------------------------------------------------------------------------------------

def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--game", choices=sorted(OPENSPIEL), help="the game (its ladder follows)")
    ap.add_argument("--checkpoints", help="JSON list of {label, path, cpu_hours, games, examples}")
    ap.add_argument("--net", action="append", default=[], help="LABEL=PATH (repeatable)")
    ap.add_argument("--only", default="", help="comma-separated labels of --checkpoints to play")
    ap.add_argument("--agent", default="minimax:iterations=40", help="how a checkpoint plays (net= added)")
    ap.add_argument("--rungs", default="100,1000", help="simulation counts of the ladder's rungs; ours:N is "
                    "this project's MCTS at N iterations where the ladder is OpenSpiel's (rungs above it)")
    ap.add_argument("--net-rungs", default=None, help="the rungs the checkpoints play (default: all); "
                    "the others only bridge neighbouring rungs whose games are too one-sided to rate")
    ap.add_argument("--games", type=int, default=20, help="games per checkpoint and rung (seats alternate)")
    ap.add_argument("--rung-games", type=int, default=20, help="games between neighbouring rungs")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--in-flight", type=int, default=DEFAULT_IN_FLIGHT,
                    help="games in flight per worker (one network call per round across them)")
    ap.add_argument("--json", default=DEFAULT_JSON)
    ap.add_argument("--figures", default=os.path.join(HERE, "figures"))
    ap.add_argument("--report", action="store_true", help="only rate, print the tables, draw the figure")
    ap.add_argument("--cards", action="store_true", help="also write the Elo into the shipped model cards")
    args = ap.parse_args(argv)

    data = load_results(args.json)
    if not args.report:
        if not args.game:
            ap.error("--game is needed (or --report)")
        spec = args.game
        os_version = None
        if OPENSPIEL[spec]:
            from importlib.metadata import version
            os_version = version("open_spiel")
        entry = data["games"].setdefault(spec, {"players": {}, "matches": {}})
        if OPENSPIEL[spec]:
            name, params = OPENSPIEL[spec]
            entry["ladder"] = (f"OpenSpiel {os_version} {name}({', '.join(f'{k}={v}' for k, v in params.items())}) "
                               f"C++ MCTSBot, random rollouts ({OS_ROLLOUTS} per leaf), uct_c={OS_UCT_C}, "
                               f"solve={OS_SOLVE}, {OS_MAX_MB} MB")
        else:
            entry["ladder"] = ("this project's MCTS (UCT, c=sqrt 2, random playouts) at fixed iterations "
                               "(OpenSpiel's othello is 8x8 only)")
        if entry.get("agent", args.agent) != args.agent:
            print(f"error: {spec} was played with --agent {entry['agent']!r}; a new agent needs a new --json",
                  file=sys.stderr)
            return 2
        entry["agent"] = args.agent
        rungs = [rung_player(spec, x) for x in args.rungs.split(",") if x]
        nets = []
        if args.checkpoints:
            with open(args.checkpoints) as f:
                listed = json.load(f)
            only = set(filter(None, args.only.split(",")))
            base = os.path.dirname(os.path.abspath(args.checkpoints))
            for c in listed:
                if (only and c["label"] not in only) or (not only and c.get("milestone") is None):
                    continue            # latest.h5 only when named: it is the last milestone's network
                path = c["path"] if os.path.isabs(c["path"]) else os.path.join(base, c["path"])
                nets.append(net_player(c["label"], os.path.relpath(path, ROOT), args.agent, c))
                nets[-1].update({k: c[k] for k in ("member",) if k in c})
        for item in args.net:
            label, _, path = item.partition("=")
            nets.append(net_player(label, path, args.agent))
        for p in rungs + nets:
            entry["players"][p["label"]] = p
        entry["anchor"] = _rungs(entry)[0]["label"]         # the weakest rung, the outside engine's
        if OPENSPIEL[spec] and any("agent" in p for p in _rungs(entry)):
            entry["ladder"] += ("; the rungs labelled mctsN-ours, above OpenSpiel's, are this project's MCTS "
                                "(mcts:iterations=N, random playouts), rated through their games with their "
                                "neighbours")
        rungs.sort(key=_rung_order)
        net_rungs = rungs if args.net_rungs is None else [rung_player(spec, x) for x in
                                                           args.net_rungs.split(",") if x]
        for p in net_rungs:
            entry["players"].setdefault(p["label"], p)
        pairs = [(rungs[i], rungs[i + 1]) for i in range(len(rungs) - 1)]
        tasks = schedule(entry, spec, pairs, args.rung_games)
        tasks += schedule(entry, spec, [(n, r) for n in nets for r in net_rungs], args.games)
        data.setdefault("meta", {}).update({
            "python": sys.version.split()[0], "platform": platform.platform(),
            "processor": platform.processor() or platform.machine(), "cpus": os.cpu_count(),
            "open_spiel": os_version or data.get("meta", {}).get("open_spiel"),
            "date": time.strftime("%Y-%m-%d")})
        t0 = time.time()
        run_tasks(args.json, data, spec, tasks, args.workers, max(1, args.in_flight))
        print(f"{spec}: played in {time.time() - t0:.0f} s", flush=True)
    print(report(data, args.figures))
    save_results(args.json, data)
    if args.cards:
        fill_cards(data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
