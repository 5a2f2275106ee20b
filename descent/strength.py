"""Strength you can name: each game's rating table, on the Elo scale of the outside ladder.

The scale is ``research/ladder.py``'s: Bradley-Terry ratings over games against fixed MCTS rungs
with random rollouts, **OpenSpiel's MCTS at 100 simulations = Elo 0** (breakthrough 6x6, havannah
base 4; reversi 6x6, which OpenSpiel has only at 8x8, uses this project's MCTS at 100 iterations as
its ladder). The ratings are relative to that ladder and to nothing else: they say how a level
scores against those searchers, not how it would score against people or a FIDE-style pool.

Every named level of ``descent play`` is rated at a **fixed iteration budget**, so that its strength
is the same on every machine (a ``time=`` budget gives more iterations on a faster machine, and the
rating would follow it):

* ``easy``, ``medium``, ``hard``: the Gaussian difficulty levels over Unbounded Minimax with the
  shipped final network at ``LEVEL_ITERATIONS`` iterations a move;
* ``strongest``: Unbounded Minimax with that network at ``LEVEL_ITERATIONS`` (the ladder's own agent);
* ``balanced``: Unbounded Minibal_+ at the budget of the shipped calibration;
* ``adaptive``: starts as ``balanced`` and then follows the person, so it has no rating of its own:
  the table gives the rating of its starting setting.

The continuous setting behind ``--elo N`` is the Gaussian selection with a free mean ``mu``
(``gaussian:level=custom,mu=M,sigma=0.3,base=minimax``) at the same budget: ``mu`` = 0.4, 0.6 and 1.0
are easy, medium and hard, lower means pick worse moves on purpose. Its measured curve, together with
the named levels, is the table's ``settings``; ``level_for_elo`` takes the measured setting nearest
to the asked rating.

The tables are ``strength.json`` beside each shipped network's card (``checkpoints/shipped/<slug>/``,
package data in an installed wheel), written by ``descent rate-levels`` (``descent.levels``) and checked on every load
against ``TABLE`` (``games.validate``: plain JSON, nothing executed); a malformed table is one
``StrengthError``.
"""
from __future__ import annotations

from pathlib import Path

from games import validate as v
from games.errors import GameError
from descent import shipped
import games
import os
from search_ext.agents import parse_agent

__all__ = ["StrengthError", "LEVEL_ITERATIONS", "SIGMA", "CURVE_MUS", "TABLE_FILE", "level_ratings",
           "level_for_elo", "elo_span", "load_table", "rating_text", "reference_markdown", "pick_text", "describe_levels", "level_notes", "setting_spec", "level_spec", "matches"]

LEVEL_ITERATIONS = 40          # the named levels' budget when rated (iterations a move)
SIGMA = 0.3                    # seed 003's spread of every Gaussian level
CURVE_MUS = (0.1, 0.2, 0.3, 0.5, 0.7, 0.8, 0.9, 0.95)   # besides easy 0.4, medium 0.6, hard 1.0
NAMED_MUS = {"easy": 0.4, "medium": 0.6, "hard": 1.0}
TABLE_FILE = "strength.json"
FORMAT = "descent-strength-1"
NET_TOKEN = "final.weights.h5"  # how the tables name the shipped final network
RATED_LEVELS = ("easy", "medium", "hard", "balanced", "strongest", "adaptive")


class StrengthError(GameError):
    """A game without a rating table, a rating outside its table, or a malformed table."""


def level_spec(level: str, iterations: int = LEVEL_ITERATIONS, net: str = NET_TOKEN) -> str:
    """The agent spec of a named Gaussian or minimax level at a fixed budget (``descent.api``'s
    ``agent_spec`` without the seed)."""
    if level == "strongest":
        return f"minimax:iterations={iterations},net={net}"
    return f"gaussian:level={level},base=minimax,iterations={iterations},net={net}"


def setting_spec(mu: float, iterations: int = LEVEL_ITERATIONS, net: str = NET_TOKEN) -> str:
    """The continuous setting at mean ``mu``."""
    return f"gaussian:level=custom,mu={mu:g},sigma={SIGMA:g},base=minimax,iterations={iterations},net={net}"


# ---- the table file --------------------------------------------------------------------------------

def _elo_entry(extra=None):
    return v.Where(v.Record({"elo": v.Real(-1e5, 1e5), "low": v.Real(-1e5, 1e5), "high": v.Real(-1e5, 1e5),
                             "spec": v.Str(4096, empty=False), "games": v.Int(0, v.MAX_COUNT)},
                            {"note": v.Str(1024), "label": v.Str(128), "at_least": v.Bool(), **(extra or {})}),
                   lambda e: None if e["low"] <= e["elo"] <= e["high"] else
                   f"has elo {e['elo']} outside its interval [{e['low']}, {e['high']}]")


# a level's games against an outside reference (``descent rate-levels --reference``)
REFERENCE = v.Record({"level": v.Str(64, choices=RATED_LEVELS), "engine": v.Str(4096, empty=False),
                      "about": v.Str(4096, empty=False), "games": v.Int(1, v.MAX_COUNT),
                      "score": v.Real(0.0, 1.0), "low": v.Real(0.0, 1.0), "high": v.Real(0.0, 1.0)})

TABLE = v.Record({"format": v.Str(64, choices=(FORMAT,)), "game": v.Str(256, empty=False),
                  "anchor": v.Str(256, empty=False), "anchor_label": v.Str(64, empty=False),
                  "ladder": v.Str(4096, empty=False), "iterations": v.Int(1, v.MAX_COUNT),
                  "levels": v.Where(v.Map(_elo_entry()),
                                    lambda d: None if set(d) <= set(RATED_LEVELS) else
                                    f"has unknown levels {sorted(set(d) - set(RATED_LEVELS))}"),
                  "settings": v.Where(v.List(_elo_entry({"mu": v.Opt(v.Real(0.0, 1.0))}), 2, 1000),
                                      lambda s: None if all(a["elo"] <= b["elo"] for a, b in zip(s, s[1:]))
                                      else "must be sorted by elo")},
                 {"source": v.Str(4096), "date": v.Str(64), "check": v.Any_(), "head_to_head": v.Any_(),
                  "reference": v.List(REFERENCE, 0, 1000)})


def _table_path(game_spec: str, base=None) -> Path | None:
    found = shipped.find(game_spec, base)
    if found is None:
        return None
    return found[0] / TABLE_FILE


def load_table(path, game_spec: str | None = None) -> dict:
    """Read and check one table file (``StrengthError`` naming the file and the entry otherwise)."""
    table = v.load_json(path, TABLE, StrengthError, f"rating table {path}")
    if game_spec is not None and table["game"] != game_spec:
        raise StrengthError(f"rating table {path}: is for {table['game']}, expected {game_spec}")
    return table


def table(game_spec: str, base=None) -> dict | None:
    """The rating table of a game spec (canonical, e.g. ``reversi(size=6)``), or None when none ships."""
    spec = games.load(game_spec).spec
    path = _table_path(spec, base)
    if path is None or not path.is_file():
        return None
    return load_table(path, spec)


def _resolved(spec: str, game_spec: str, base=None) -> str:
    found = shipped.find(game_spec, base)
    return shipped._resolve(spec, found[0]) if found else spec


def level_ratings(game_spec: str, base=None) -> dict:
    """{level: {"elo", "low", "high", "spec"}} for every rated level of the game (the spec with the
    shipped network's path), or {} when the game has no table."""
    t = table(game_spec, base)
    if t is None:
        return {}
    out = {}
    for lvl, e in t["levels"].items():
        out[lvl] = {"elo": e["elo"], "low": e["low"], "high": e["high"], "spec": _resolved(e["spec"], t["game"], base)}
        if e.get("at_least"):
            out[lvl]["at_least"] = True     # won every ladder game: elo is a lower bound
    return out


def elo_span(game_spec: str, network: str | None, base=None) -> tuple[float, float] | None:
    """The Elo range ``level_for_elo`` covers for ``game_spec`` when ``network`` is the shipped final
    network the table rates, else None (no table, another network, none)."""
    t = table(game_spec, base)
    final = shipped.network(game_spec, "final", base)
    if t is None or not network or not final or os.path.realpath(str(network)) != os.path.realpath(final):
        return None
    return t["settings"][0]["elo"], t["settings"][-1]["elo"]


def level_for_elo(game_spec: str, elo: float, base=None) -> dict:
    """The measured setting whose rating is nearest to ``elo``: {"spec" (shipped paths resolved),
    "elo", "low", "high", "label", "mu", "anchor"}. ``StrengthError`` for a game without a table or an
    ``elo`` outside the table's range (the message gives the range)."""
    spec = games.load(game_spec).spec
    t = table(spec, base)
    if t is None:
        have = sorted(e[1]["game"] for e in shipped.entries(base)
                      if (e[0] / TABLE_FILE).is_file())
        raise StrengthError(f"{spec} has no rating table, so --elo cannot be used with it "
                            f"(games with one: {', '.join(have) or 'none'})")
    try:
        elo = float(elo)
    except (TypeError, ValueError):
        raise StrengthError(f"elo must be a number, got {elo!r}") from None
    lo, hi = t["settings"][0]["elo"], t["settings"][-1]["elo"]
    if not lo <= elo <= hi:
        raise StrengthError(f"{spec}: Elo {elo:+.0f} is outside the rated range {lo:+.0f} to {hi:+.0f} "
                            f"({t['anchor']})")
    best = min(t["settings"], key=lambda s: (abs(s["elo"] - elo), s["elo"]))
    return {"spec": _resolved(best["spec"], spec, base), "elo": best["elo"], "low": best["low"],
            "high": best["high"], "label": best.get("label"), "mu": best.get("mu"), "anchor": t["anchor"]}


def pick_text(pick: dict, asked: float) -> str:
    """What ``--elo`` (``UCI_Elo``) picked, and how far it is from the rating asked:
    'Elo +400 asked: plays mu0.7, rated +161 [+40, +280], 239 below the request (against ...)'."""
    gap = pick["elo"] - float(asked)
    how = "exactly the request" if abs(gap) < 0.5 else f"{abs(gap):.0f} {'above' if gap > 0 else 'below'} the request"
    label = (pick.get("label") or "").replace("level-", "level ")
    return (f"Elo {float(asked):+.0f} asked: plays {label}, rated {pick['elo']:+.0f} "
            f"[{pick['low']:+.0f}, {pick['high']:+.0f}], {how} (the nearest measured setting; "
            f"against {pick['anchor']})")


ABOUT = {
    "easy": "picks a weaker move on purpose, often",
    "medium": "picks a weaker move on purpose, sometimes",
    "hard": "strays from the best move it finds, rarely",
    "strongest": "the best move it finds",
    "balanced": "aims at an even game against its opponent, whoever that is",
    "adaptive": "follows one person's results across games (it starts as balanced)",
}


def _h2h(t: dict, a: str, b: str) -> dict | None:
    """The head-to-head record of levels ``a`` and ``b`` in the table (either order), as
    {"weaker", "stronger" (by ladder rating), "score" (the weaker's), "low", "high", "games"}; whether
    one level is the stronger head to head is read from the interval (``level_notes``)."""
    for h in t.get("head_to_head") or ():
        if isinstance(h, dict) and {h.get("weaker"), h.get("stronger")} == {a, b}:
            return h
    return None


def level_notes(t: dict) -> dict:
    """What a person should know beside each level's rating, from the table's head-to-head games:
    where two levels are of one strength (ratings that cannot be told apart, or a level that won
    every ladder game) the head-to-head score tells them apart, or says they are one; the balanced
    level's place is explained (its ladder rating measures it against fixed searchers, while it plays
    to keep the game even against whoever it meets)."""
    notes: dict = {}
    lv = t["levels"]
    for a, b in (("hard", "strongest"), ("medium", "hard"), ("easy", "medium")):
        if a not in lv or b not in lv:
            continue
        ea, eb = lv[a], lv[b]
        close = eb.get("at_least") or ea.get("at_least") or ea["high"] >= eb["low"]
        h = _h2h(t, a, b)
        if not close or h is None:
            continue
        # the record's "weaker" is the lower rated on the ladder, which need not be ``a``
        if h["weaker"] == a:
            sa, lo, hi = h["score"], h["low"], h["high"]
        else:
            sa, lo, hi = 1 - h["score"], 1 - h["high"], 1 - h["low"]
        rec = f"{a} scores {sa:.2f} [{lo:.2f}, {hi:.2f}] against it in {h['games']} games"
        if hi < 0.5:
            notes[b] = f"its rating and {a}'s overlap on the ladder, but head to head it is the stronger: {rec}"
        elif lo > 0.5:
            notes[b] = f"its rating and {a}'s overlap on the ladder, but head to head it is the weaker: {rec}"
        else:
            notes[b] = f"one strength with {a}: head to head {rec}"
    if "balanced" in lv:
        bits = []
        for other in ("hard", "medium", "strongest"):
            h = _h2h(t, "balanced", other)
            if h is not None:
                mine = h["score"] if h["weaker"] == "balanced" else 1 - h["score"]
                bits.append(f"{mine:.2f} against {other}")
        notes["balanced"] = ("its ladder rating measures it against fixed searchers that it plays to keep "
                             "even, not its strength against you: it aims at an even game against whoever "
                             "it meets" + (f"; head to head it scores {', '.join(bits)}" if bits else ""))
    return notes


def describe_levels(game_spec: str, base=None) -> list[dict]:
    """The game's levels for a person (``descent levels``): per level its name, what it does, its
    rating on the table's scale (or None), a note (``level_notes``), its setting and its scores
    against outside references (``reference``: the table's rows of that level); a game without a
    table gets its levels with ``rating`` None."""
    spec = games.load(game_spec).spec
    t = table(spec, base)
    rows = []
    notes = level_notes(t) if t else {}
    for lvl in RATED_LEVELS:
        e = t["levels"].get(lvl) if t else None
        rows.append({"level": lvl, "about": ABOUT[lvl], "rating": rating_text(e, t["anchor"]) if e and t else None,
                     "elo": e["elo"] if e else None, "note": notes.get(lvl),
                     "setting": e["spec"] if e else None, "games": e["games"] if e else None,
                     "reference": [x for x in (t.get("reference") or ()) if x["level"] == lvl] if t else []})
    return rows


def rating_text(entry: dict, anchor: str) -> str:
    """'Elo +710 [+600, +820] against OpenSpiel MCTS 100 simulations = 0' ('Elo at least +1206 ...' for
    a level that won every ladder game)."""
    if entry.get("at_least"):
        return f"Elo at least {entry['elo']:+.0f} (it won every ladder game) against {anchor}"
    return f"Elo {entry['elo']:+.0f} [{entry['low']:+.0f}, {entry['high']:+.0f}] against {anchor}"


def anchor(game_spec: str, base=None) -> str | None:
    t = table(game_spec, base)
    return None if t is None else t["anchor"]


def _canonical(spec: str):
    """An agent spec without its seed, the network as a resolved path: what decides the strength."""
    name, opts = parse_agent(spec)
    opts = {k: val for k, val in opts.items() if k != "seed"}
    if opts.get("net"):
        opts["net"] = os.path.realpath(str(opts["net"]))
    return name, tuple(sorted((k, str(val)) for k, val in opts.items()))


def matches(entry_spec: str, agent_spec: str) -> bool:
    """Whether ``agent_spec`` (e.g. an ``Opponent``'s) is the rated setting ``entry_spec``."""
    try:
        return _canonical(entry_spec) == _canonical(agent_spec)
    except GameError:
        return False


def _num(x: float) -> str:
    return f"{x:+,.0f}"


def markdown_table(base=None) -> str:
    """The docs' table of every shipped rating table (``docs/strength.md`` holds exactly this;
    ``tests/test_strength.py`` checks it): per game, each named level's rating with its 95% interval,
    then the continuous curve of ``--elo``."""
    rows = ["| game | level | setting | Elo [95%] | games |", "|---|---|---|---|---|"]
    for d, card in shipped.entries(base):
        path = d / TABLE_FILE
        if not path.is_file():
            continue
        t = load_table(path, card["game"])
        first = True
        for lvl in RATED_LEVELS:
            e = t["levels"].get(lvl)
            if e is None:
                continue
            start = " (its start)" if lvl == "adaptive" else ""
            rating = (f"at least {_num(e['elo'])} (won all its ladder games)" if e.get("at_least") else
                      f"{_num(e['elo'])} [{_num(e['low'])}, {_num(e['high'])}]")
            rows.append(f"| {'`' + t['game'] + '`' if first else ''} | {lvl}{start} | `{e['spec']}` | "
                        f"{rating} | {e['games']} |")
            first = False
        curve = ", ".join(f"{s['label'].replace('level-', '')} {_num(s['elo'])}" for s in t["settings"])
        rows.append(f"| | `--elo` {_num(t['settings'][0]['elo'])} to {_num(t['settings'][-1]['elo'])} | "
                    f"the settings: {curve} | {t['anchor']} | |")
    return "\n".join(rows)


def reference_markdown(base=None) -> str:
    """The docs' table of every shipped table's outside references (``docs/strength.md`` holds
    exactly this): per game and reference, each level's score with its 95% interval and games."""
    rows = ["| game | reference | " + " | ".join(lvl for lvl in RATED_LEVELS if lvl != "adaptive") + " |",
            "|---|---|" + "---|" * (len(RATED_LEVELS) - 1)]
    for d, card in shipped.entries(base):
        path = d / TABLE_FILE
        if not path.is_file():
            continue
        t = load_table(path, card["game"])
        refs: dict = {}
        for x in t.get("reference") or ():
            refs.setdefault(x["about"], {})[x["level"]] = x
        for about, by_level in refs.items():
            cells = [f"{e['score']:.2f} [{e['low']:.2f}, {e['high']:.2f}] ({e['games']})" if e else ""
                     for e in (by_level.get(lvl) for lvl in RATED_LEVELS if lvl != "adaptive")]
            rows.append(f"| `{t['game']}` | {about} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def card_levels(table_: dict) -> dict:
    """What a model card shows of the table: each level's rating and the anchor."""
    return {"anchor": table_["anchor"], "iterations": table_["iterations"], "source": TABLE_FILE,
            "levels": {lvl: {k: e[k] for k in ("elo", "low", "high", "spec", "at_least") if k in e}
                       for lvl, e in table_["levels"].items()}}
