"""An opponent that adapts to a person across games (``descent play --level adaptive --player NAME``).

Each person has a profile, a small JSON file in the user's data directory: ``$DESCENT_DATA_DIR``
when set, else ``$XDG_DATA_HOME/descent``, else ``~/.local/share/descent``; the file is
``profiles/<name>-<hash>.json`` and holds one entry per game spec. After a game it is updated
under a lock (``<file>.lock``): the latest profile on disk is read, this game's result applied to
it and the file replaced atomically (temporary file, fsync, rename), so two games of one person
played at once both count. An unreadable profile is reported in one line, kept aside as
``<file>.corrupt`` and replaced by a fresh one.

**The ladder.** The opponent plays from a ladder of rungs, weakest first: Unbounded Minibal_+ with
each network of the pools (the low pool's early checkpoints, then the high pool, each from the
lowest ranked up; ``descent rank`` writes the pools), and on top Unbounded Minimax with the best
network (the strongest level). Without pools the ladder is Minibal_+ then Minimax with the best
network, or with the networks shipped in the repository (Minibal_+ with the early then the final
one, then Minimax with the final one; ``descent.shipped``), or with random-playout leaves when there
is no network (or ``net=None``). Every ladder with a network has one more rung at the bottom,
Minibal_+ with random-playout leaves (``FLOOR``): for a person weaker than the weakest network at
one iteration (the shipped breakthrough early network at 1-3 iterations still won 65% against
OpenSpiel's MCTS at 100 simulations, BENCHMARKS.md). The start is the top Minibal_+
rung at the calibrated budget (``descent calibrate``, else the calibration shipped with the
shipped networks) or ``DEFAULT_ITERATIONS``.

**The rule** (Robbins-Monro stochastic approximation on x = ln(iterations), with Kesten's step
schedule). After a game whose score for the person is s (win 1, draw 1/2, loss or resignation 0):

    x <- x + a_k * 2 (s - 1/2),      a_k = max(A_MIN, A0 / (1 + k)),

where k counts the changes of direction so far (a person's win after a loss or the reverse), and is
halved after every RUN_GROW = 3 results in a row in one direction (as the PEST staircase of
psychophysics, Taylor and Creelman 1967, doubles its step): far from balance the results keep one
sign and the steps stay large; around balance they alternate and the steps shrink, down to a floor
A_MIN; when the person's strength changes, runs in one direction make the steps grow again.
A0 = ln 4 (a first win multiplies the budget by 4), A_MIN = ln 1.25. When x leaves
[ln min_iterations, ln max_iterations] the budget alone cannot reach balance: the opponent moves
one rung up (or down), restarts at the middle of the range in log-budget and resets k; at the ends
of the ladder x is clipped. Draws leave everything unchanged (they are already balanced).
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import re
import sys
import time
from pathlib import Path

from games.errors import GameError
from training import fileio
from descent import shipped
from descent.networks import best_network, ranked_pools
from training.run import DEFAULT_ROOT
from descent.calibrate import find_calibration

DATA_ENV = "DESCENT_DATA_DIR"
DEFAULT_ITERATIONS = 100
MIN_ITERATIONS = 1
MAX_ITERATIONS = 10000
A0 = math.log(4.0)
A_MIN = math.log(1.25)
RUN_GROW = 3             # results in a row in one direction after which k is halved
HISTORY = 200            # games kept per profile entry
PLAYOUT_LEAF = "eval=playout,playouts=4"
LOCK_SECONDS = 60        # how long a profile update waits for another process's update of it


class ProfileError(GameError):
    """A bad player name or adaptive setting."""


def data_dir() -> Path:
    env = os.environ.get(DATA_ENV)
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_DATA_HOME")
    base = Path(xdg) if xdg else Path.home() / ".local" / "share"
    return base / "descent"


_NAME = re.compile(r"^[\w .@-]{1,64}$")


def check_player(name) -> str:
    if not isinstance(name, str) or not _NAME.match(name) or not name.strip(" ."):
        raise ProfileError(f"player name {name!r}: use 1 to 64 letters, digits, spaces, '.', '_', '-' or '@'")
    return name


def profile_path(player: str) -> Path:
    check_player(player)
    slug = re.sub(r"[^A-Za-z0-9_-]+", "_", player).strip("_")[:32] or "player"
    return data_dir() / "profiles" / f"{slug}-{hashlib.sha1(player.encode()).hexdigest()[:8]}.json"


def _warn(text: str) -> None:
    print(text, file=sys.stderr)


def step_size(k: int) -> float:
    return max(A_MIN, A0 / (1 + k))


def update(entry: dict, person_score: float, rungs: int, lo: float, hi: float, sign: int = 1) -> dict:
    """The rule above applied to one game (``entry`` is changed in place and returned).
    ``sign=-1`` gives the mis-specified rule (moving the wrong way), for tests."""
    e = person_score - 0.5
    if e == 0:
        return entry
    d = 1 if e > 0 else -1
    if entry.get("last_direction") and entry["last_direction"] != d:
        entry["k"] += 1                                  # a reversal: smaller steps
        entry["run"] = 1
    else:
        entry["run"] = entry.get("run", 0) + 1
        if entry["run"] >= RUN_GROW and entry["k"] > 0:  # a run one way: the balance point moved
            entry["k"] //= 2
            entry["run"] = 0
    entry["last_direction"] = d
    x = entry["log_budget"] + sign * step_size(entry["k"]) * 2 * e
    xl, xh = math.log(lo), math.log(hi)
    if x > xh and entry["rung"] < rungs - 1:
        entry["rung"] += 1
        x, entry["k"], entry["last_direction"], entry["run"] = (xl + xh) / 2, 0, 0, 0
    elif x < xl and entry["rung"] > 0:
        entry["rung"] -= 1
        x, entry["k"], entry["last_direction"], entry["run"] = (xl + xh) / 2, 0, 0, 0
    entry["log_budget"] = min(xh, max(xl, x))
    return entry


FLOOR = {"algorithm": "minibal_plus", "net": None, "label": "minibal_plus@playout"}


def ladder(game_spec: str, root=None, net: str | None = "best") -> list[dict]:
    """The rungs, weakest first: {"algorithm", "net" (path or None), "label"}. ``net``: "best"
    (the pools, else the best network, else the shipped networks: early then final), a network
    path (Minibal_+ then Minimax with it) or None (random-playout leaves). A ladder with a network
    starts with ``FLOOR``, Minibal_+ on random-playout leaves."""
    rungs = _network_ladder(game_spec, root, net)
    return rungs if all(r["net"] is None for r in rungs) else [dict(FLOOR)] + rungs


def _network_ladder(game_spec: str, root, net) -> list[dict]:
    root = Path(root) if root else DEFAULT_ROOT
    if net != "best":
        tag = Path(net).name if net else "playout"
        return [{"algorithm": "minibal_plus", "net": net, "label": f"minibal_plus@{tag}"},
                {"algorithm": "minimax", "net": net, "label": f"minimax@{tag}"}]
    for pools in ranked_pools(game_spec, root):
        rank = {r["net"]: r["rank"] for r in pools.get("ranking", [])}
        low = sorted(pools.get("low", []), key=lambda o: -rank.get(o.get("final"), 0))
        high = sorted(pools["high"], key=lambda h: -rank.get(h["net"], 0))
        nets = [(o["path"], o["net"]) for o in low + high if Path(o["path"]).exists()]
        if nets:
            return ([{"algorithm": "minibal_plus", "net": p, "label": f"minibal_plus@{lab}"} for p, lab in nets]
                    + [{"algorithm": "minimax", "net": nets[-1][0], "label": f"minimax@{nets[-1][1]}"}])
    net = best_network(game_spec, root)
    if shipped.is_shipped(net):
        early = shipped.network(game_spec, "early")
        return [{"algorithm": "minibal_plus", "net": early, "label": "minibal_plus@shipped-early"},
                {"algorithm": "minibal_plus", "net": net, "label": "minibal_plus@shipped-final"},
                {"algorithm": "minimax", "net": net, "label": "minimax@shipped-final"}]
    tag = "net" if net else "playout"
    return [{"algorithm": "minibal_plus", "net": net, "label": f"minibal_plus@{tag}"},
            {"algorithm": "minimax", "net": net, "label": f"minimax@{tag}"}]


def rung_spec(rung: dict, iterations: int, seed: int) -> str:
    leaf = f"net={rung['net']}" if rung.get("net") else PLAYOUT_LEAF
    return f"{rung['algorithm']}:iterations={iterations},{leaf},seed={seed}"


class Profile:
    """One person's profile file; ``entry(game)`` is the adaptive state for a game."""

    def __init__(self, player: str, warn=_warn):
        self.player = check_player(player)
        self.path = profile_path(player)
        self.warn = warn
        self.data = self._read(warn)

    def _fresh(self) -> dict:
        return {"version": 1, "player": self.player, "games": {}}

    def _read(self, warn) -> dict:
        p = self.path
        if not p.exists():
            return self._fresh()
        try:
            data = json.loads(p.read_text())
            if not isinstance(data, dict) or not isinstance(data.get("games"), dict):
                raise ValueError("not a profile")
            for e in data["games"].values():
                _check_entry(e)
            return data
        except (OSError, ValueError, TypeError, KeyError, UnicodeDecodeError) as exc:
            bad = p.with_name(p.name + ".corrupt")
            try:
                os.replace(p, bad)
                where = f"kept as {bad}"
            except OSError:
                where = "left in place"
            warn(f"warning: player profile {p} was unreadable ({str(exc)[:80]}); {where}, starting a new one")
            return self._fresh()

    def entry(self, game: str, rungs: list[dict], start_iterations: int, lo: int, hi: int) -> dict:
        labels = [r["label"] for r in rungs]
        e = self.data["games"].get(game)
        if e is None or e.get("ladder") != labels:
            start_rung = max(i for i, r in enumerate(rungs) if r["algorithm"] == "minibal_plus") \
                if any(r["algorithm"] == "minibal_plus" for r in rungs) else 0
            old = e
            e = {"log_budget": math.log(min(hi, max(lo, start_iterations))), "rung": start_rung, "k": 0,
                 "last_direction": 0, "run": 0, "games": 0, "history": [], "ladder": labels}
            if old is not None and old.get("ladder") and 0 <= old.get("rung", -1) < len(old["ladder"]) \
                    and old["ladder"][old["rung"]] in labels:      # the pools changed: keep the same net
                e.update(log_budget=old["log_budget"], rung=labels.index(old["ladder"][old["rung"]]),
                         games=old.get("games", 0), history=old.get("history", []))
            self.data["games"][game] = e
        e["log_budget"] = min(math.log(hi), max(math.log(lo), e["log_budget"]))
        return e

    def lock(self) -> fileio.FileLock:
        """The profile's lock (``<file>.lock``; waits up to ``LOCK_SECONDS``, then ``ProfileError``)."""
        lock = self.path.with_name(self.path.name + ".lock")
        return fileio.FileLock(lock, timeout=LOCK_SECONDS, error=ProfileError,
                               busy=f"player profile {self.path}: another process kept it locked for "
                                    f"{LOCK_SECONDS} s ({lock}); try again")

    def save(self, change=None) -> None:
        """A locked read-modify-write: under the profile's lock, the latest profile on disk
        replaces ``data``, ``change(self)`` (if given) applies this game's update to it, and it is
        written atomically. An update saved by another process meanwhile is kept."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.lock():
            self.data = self._read(self.warn)
            if change is not None:
                change(self)
            fileio.write_json(self.path, self.data, indent=1, sort_keys=True)


def _check_entry(e) -> None:
    if not isinstance(e, dict):
        raise ValueError("entry is not an object")
    if not isinstance(e.get("log_budget"), (int, float)) or not math.isfinite(e["log_budget"]):
        raise ValueError("bad log_budget")
    for k in ("rung", "k", "games"):
        if not isinstance(e.get(k), int) or e[k] < 0:
            raise ValueError(f"bad {k}")
    if not isinstance(e.get("history"), list) or not isinstance(e.get("ladder"), list):
        raise ValueError("bad history or ladder")
    if e["rung"] >= max(1, len(e["ladder"])):
        raise ValueError("rung out of the ladder")


class Adaptive:
    """The adaptive state of one person for one game: the current agent spec, and ``record``."""

    def __init__(self, player: str, game: str, start_iterations: int | None = None,
                 min_iterations: int = MIN_ITERATIONS, max_iterations: int = MAX_ITERATIONS,
                 root=None, warn=_warn, rungs: list[dict] | None = None, net: str | None = "best"):
        if not 1 <= min_iterations < max_iterations:
            raise ProfileError(f"adaptive budget range {min_iterations}..{max_iterations}: need 1 <= min < max")
        self.game, self.lo, self.hi = game, min_iterations, max_iterations
        self.rungs = rungs if rungs is not None else ladder(game, root, net)
        if start_iterations is None:
            cal = find_calibration(game, "minibal_plus", root=root)
            if cal is None and any(shipped.is_shipped(r.get("net")) for r in self.rungs):
                cal = shipped.calibration(game)        # the one shipped beside the networks
            start_iterations = int(cal["budget"]) if cal and cal.get("unit") == "iterations" \
                else DEFAULT_ITERATIONS
        self.profile = Profile(player, warn)
        self.entry = self.profile.entry(game, self.rungs, start_iterations, self.lo, self.hi)

    @property
    def iterations(self) -> int:
        return int(round(math.exp(self.entry["log_budget"])))

    @property
    def rung(self) -> dict:
        return self.rungs[self.entry["rung"]]

    def spec(self, seed: int = 0) -> str:
        return rung_spec(self.rung, self.iterations, seed)

    def describe(self) -> str:
        r = self.rung
        return (f"adaptive for {self.profile.player}: {r['algorithm']} at {self.iterations} iterations "
                f"({'network ' + Path(r['net']).name if r.get('net') else 'random-playout leaves'}; rung "
                f"{self.entry['rung'] + 1} of {len(self.rungs)}; {self.entry['games']} game(s) played)")

    def record(self, person_score: float, save: bool = True) -> dict:
        """Apply the rule after a game (person's score 1, 0.5 or 0) and save the profile: under its
        lock, to the latest entry on disk (another game of the same person may have been recorded
        since this one began), so no game's update is lost."""
        if person_score not in (0, 0.5, 1):
            raise ProfileError(f"person's score {person_score!r}: expected 0, 0.5 or 1")
        played = (self.iterations, self.entry["rung"])       # what this game was played at
        change: dict = {}

        def apply(profile: Profile) -> None:
            if save:                                          # the latest entry, read under the lock
                self.entry = profile.entry(self.game, self.rungs, self.iterations, self.lo, self.hi)
            before = (self.iterations, self.entry["rung"])
            update(self.entry, person_score, len(self.rungs), self.lo, self.hi)
            self.entry["games"] += 1
            self.entry["history"] = (self.entry["history"] + [{
                "score": person_score, "iterations": played[0], "rung": played[1],
                "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}])[-HISTORY:]
            change.update(before={"iterations": before[0], "rung": before[1]},
                          after={"iterations": self.iterations, "rung": self.entry["rung"]})

        if save:
            self.profile.save(apply)
        else:
            apply(self.profile)
        return change
