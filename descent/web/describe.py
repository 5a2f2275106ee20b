"""What a person is told about the computer they play: built from a whitelist, never from a dump.

The server's agent spec (``search_ext.agents``) holds the network's path on the server and options
a person has no use for; ``public_setting`` keeps only the named options whose values are numbers
or words from fixed tables, and names the network by where it comes from (shipped with descent,
trained on this server) and its milestone, never by a file. ``opponent_text`` is the short line the
page shows ("easy (Elo -735)"), ``about`` the sentences behind it (what the level does, how it
searches, its rating and what the rating means).
"""
from __future__ import annotations

import math
import re
from pathlib import Path

from search_ext.agents import parse_agent

ALGORITHMS = {
    "minimax": "Unbounded Minimax",
    "minibal_plus": "Unbounded Minibal_+",
    "minibal": "Unbounded Minibal",
    "minibal_swing": "Minibal swing",
    "alphabeta": "alpha-beta search",
    "mcts": "Monte Carlo tree search",
    "gaussian": "Gaussian difficulty",
    "random": "random moves",
}
LEVEL_ABOUT = {
    "easy": "picks a weaker move on purpose, often",
    "medium": "picks a weaker move on purpose, sometimes",
    "hard": "strays from the best move it finds, rarely",
    "strongest": "plays the best move it finds",
    "balanced": "aims at an even game against you, whoever you are",
    "adaptive": "follows your results across games: stronger after a win of yours, weaker after a loss",
}
NAMED_MUS = {"easy": 0.4, "medium": 0.6, "hard": 1.0}
_NUMERIC = ("iterations", "time", "nodes", "depth", "mu", "sigma")
_WORD = re.compile(r"[A-Za-z0-9_.+-]{1,32}")


def _number(x):
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
        return None
    return x


def network_label(path) -> str | None:
    """Where a network comes from, in words ("the network shipped for this game (final)"), never
    its path; None without a network."""
    if not path:
        return None
    try:
        from descent import shipped  # lazy: a light module, but keep the web importable alone
        is_shipped = shipped.is_shipped(path)
    except Exception:  # noqa: BLE001 - a label is never worth a failed request
        is_shipped = False
    name = Path(str(path)).name
    stem = name[:-len(".weights.h5")] if name.endswith(".weights.h5") else Path(name).stem
    if is_shipped:
        role = stem if _WORD.fullmatch(stem) else "final"
        return f"the network shipped for this game ({role})"
    m = re.fullmatch(r"milestone_([A-Za-z0-9_.+-]{1,32})", stem)
    if m:
        return f"a network trained on this server (milestone {m.group(1)})"
    return "a network trained on this server"


def public_setting(spec: str, network=None) -> dict:
    """The computer's setting as a person may read it: the search, the selection over it (for the
    Gaussian levels), the budget and where the leaves are evaluated; only whitelisted options."""
    try:
        name, opts = parse_agent(spec)
    except Exception:  # noqa: BLE001 - an unparsable spec is described by nothing
        return {"search": "an agent of this server"}
    out: dict = {}
    inner = opts
    if name == "gaussian":
        base = opts.get("base")
        level = opts.get("level")
        out["selection"] = "Gaussian difficulty"
        out["mu"] = (_number(opts.get("mu")) if opts.get("mu") is not None
                     else NAMED_MUS.get(level) if isinstance(level, str) else None)
        out["sigma"] = _number(opts.get("sigma")) if opts.get("sigma") is not None else 0.3
        name = base if isinstance(base, str) else "minimax"
        base_options = opts.get("base_options")
        inner = base_options if isinstance(base_options, dict) else {}
    out["search"] = ALGORITHMS.get(name, "an agent of this server")
    for key in _NUMERIC:
        if key in ("mu", "sigma"):
            continue
        v = _number(inner.get(key))
        if v is not None:
            out[key] = v
    net = network or inner.get("net")
    if net:
        out["leaves"] = network_label(net)
    elif inner.get("eval") == "playout":
        out["leaves"] = "random playouts (no network)"
    else:
        out["leaves"] = "no network"
    return {k: v for k, v in out.items() if v is not None}


def signed(x: float) -> str:
    return f"{'+' if x >= 0 else '-'}{abs(round(x)):.0f}"


def rating_short(rating: dict | None) -> str:
    """'Elo -735' or 'Elo at least +206'; '' without a rating."""
    if not rating or not isinstance(rating.get("elo"), (int, float)):
        return ""
    return f"Elo {'at least ' if rating.get('at_least') else ''}{signed(rating['elo'])}"


def rating_long(rating: dict | None, adaptive: bool = False) -> str | None:
    if not rating or not isinstance(rating.get("elo"), (int, float)):
        return None
    start = "Starts at" if adaptive else "Rated"
    against = f" against {rating['anchor']}" if rating.get("anchor") else ""
    if rating.get("at_least"):
        return (f"{start} Elo at least {signed(rating['elo'])}{against}: it won every game on the rating "
                f"ladder, so only a lower bound is known.")
    return (f"{start} Elo {signed(rating['elo'])}, 95% interval [{signed(rating['low'])}, "
            f"{signed(rating['high'])}]{against}. The ladder is a set of fixed searchers: the rating says "
            f"how the level scores against them, not against people.")


def level_name(level: str, rating: dict | None) -> str:
    """The level's name as the page shows it: an Elo game's setting by its rating."""
    if level.startswith("elo "):
        return "the rated setting you asked for"
    return level


def opponent_text(level: str, rating: dict | None, adaptive=None) -> str:
    """The short line under the status: 'easy (Elo -735)'."""
    r = rating_short(rating)
    if level.startswith("elo "):
        return f"rated setting ({r})" if r else "rated setting"
    if adaptive is not None:
        return f"adaptive for {adaptive.profile.player}, {adaptive.iterations} iterations a move"
    return f"{level} ({r})" if r else level


def _budget(setting: dict) -> str:
    if "iterations" in setting:
        return f"{setting['iterations']:g} iterations a move"
    if "nodes" in setting:
        return f"{setting['nodes']:g} nodes a move"
    if "time" in setting:
        return f"{setting['time']:g} s a move"
    return "its own budget"


def about(level: str, setting: dict, rating: dict | None, note: str | None = None,
          adaptive=None, elo_note: str | None = None) -> list[str]:
    """The sentences behind the short line: what the level does, how it searches, its rating."""
    out = []
    if level.startswith("elo "):
        out.append("The computer plays the measured setting nearest to the Elo you asked for.")
    elif level in LEVEL_ABOUT:
        out.append(f"{level.capitalize()}: {LEVEL_ABOUT[level]}.")
    how = f"It searches with {setting.get('search', 'an agent')} at {_budget(setting)}"
    if setting.get("selection") and setting.get("mu") is not None:
        how += (f", then picks among the moves it found by {setting['selection']} (mean {setting['mu']:g}, "
                f"spread {setting.get('sigma', 0.3):g}: 1 is the best move, lower picks worse moves)")
    how += f"; leaves are evaluated by {setting.get('leaves', 'no network')}."
    out.append(how)
    if adaptive is not None:
        out.append(f"Your profile for this game: rung {adaptive.entry['rung'] + 1} of {len(adaptive.rungs)}, "
                   f"{adaptive.entry['games']} game(s) played.")
    if elo_note:
        out.append(elo_note.rstrip(".") + ".")
    long = rating_long(rating, adaptive is not None or level == "adaptive")
    if long:
        out.append(long)
    if note:
        out.append(note[0].upper() + note[1:].rstrip(".") + ".")
    return out
