"""Rate a game's levels: the stage behind ``descent rate-levels``, which writes the rating table
(``strength.json`` beside the shipped network's card) that ``descent play --elo``, ``descent
levels``, the engines' ``UCI_Elo`` and the page read (``descent.strength``).

Three phases, each a set of matches stored in a results database (``descent.results``, one row per
finished game, keyed by what it is), so that a rerun plays only the games that are missing and a
killed run loses only the games in progress:

1. **rate**: fixed rungs (this project's MCTS with random playouts at fixed iteration counts) play
   their neighbours, then every setting of the table (``players``: the Gaussian curve behind
   ``--elo``, easy/medium/hard, strongest and balanced) plays batches of ``BATCH`` games (seats
   alternating), each batch against the rung nearest its rating after the batches before it (a
   staircase). Which rung a batch plays depends only on the games before it, so a rerun picks the
   same rungs and finds its games. Bradley-Terry (``descent.ratings``) over all the games, the anchor
   rung at Elo 0, 95% intervals from a bootstrap of the games within each pair.
2. **h2h**: the fixed levels by rating, each against the next stronger one, and balanced against its
   neighbours, from seeded random openings: the table's ``head_to_head``, which ``descent levels``
   uses where two ratings cannot be told apart (``descent.strength.level_notes``).
3. **reference**: each named level against an outside reference, such as Fairy-Stockfish at a
   fixed skill and node budget (any agent spec): the table's ``reference``, e.g. "scores 0.45
   [0.30, 0.61] against fairy-stockfish Skill Level=3, nodes=1000 in 20 games".

A table section is computed from its phase's games; a phase with no games in the database keeps the
section the table already has (so ``--phase reference`` adds a reference to a table rated earlier).
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

from games.errors import GameError
import games
from search_ext.agents import parse_agent
from training.fileio import write_json
from descent import shipped, strength as S
from descent.match import make_opening
from descent.ratings import elo_intervals, point_elo
from descent.results import ResultsDB
from descent.stats import cluster_interval
from descent.tournament import match_row, store_matches

__all__ = ["LevelsError", "BATCH", "DEFAULT_RUNGS", "DEFAULT_ANCHOR", "rate_levels", "players", "rungs",
           "default_db", "write_table", "reference_text", "engine_label"]

BATCH = 10                                  # games of a setting between two looks at its rating
DEFAULT_RUNGS = (1, 3, 10, 30, 100, 300, 1000)
DEFAULT_ANCHOR = 100
PHASES = ("rate", "h2h", "reference")
STAGES = {"rate": "levels", "h2h": "levels-h2h", "reference": "levels-reference"}
H2H_OPENING_PLIES = 2


class LevelsError(GameError):
    """A game whose levels cannot be rated here: no shipped network, bad rungs, no table yet."""


def default_db(game_spec: str, base=None) -> Path:
    """Where a game's rating games are kept by default: ``results/levels/<shipped entry name>.db``."""
    return Path("results") / "levels" / f"{shipped.entry_dir(game_spec, base).name}.db"


def _entry(game_spec: str, base=None) -> tuple[Path, dict]:
    found = shipped.find(game_spec, base)
    if found is None:
        have = ", ".join(c["game"] for _, c in shipped.entries(base)) or "none"
        raise LevelsError(f"{game_spec} has no shipped network to rate (games with one: {have}); "
                          f"ship one first with `descent ship {game_spec}`")
    return found


def _fingerprint(card: dict) -> str:
    """What the settings' strength depends on besides their spec: the shipped final network."""
    return "net-sha256:" + card["networks"]["final"]["sha256"][:16]


# ---- the players --------------------------------------------------------------------------------

def rungs(sims, anchor: int = DEFAULT_ANCHOR) -> list[dict]:
    """The ladder: {label, spec, sims} for each iteration count, weakest first."""
    counts = sorted({int(x) for x in sims})
    if len(counts) < 2 or counts[0] < 1:
        raise LevelsError(f"rungs {','.join(map(str, sims))}: give at least two positive iteration counts")
    if anchor not in counts:
        raise LevelsError(f"the anchor {anchor} is not one of the rungs ({','.join(map(str, counts))})")
    return [{"label": f"mcts{n}", "spec": f"mcts:iterations={n}", "sims": n} for n in counts]


def players(game_spec: str, base=None) -> list[dict]:
    """The settings of the table, strongest Gaussian first: {label, spec (the table's, the network
    as ``final.weights.h5``), mu (None for strongest and balanced), level (None for the curve)}."""
    _, card = _entry(game_spec, base)
    named = {mu: lvl for lvl, mu in S.NAMED_MUS.items()}
    out: list[dict] = [{"label": "level-strongest", "spec": S.level_spec("strongest"), "mu": None, "level": "strongest"}]
    for mu in sorted(set(S.CURVE_MUS) | set(S.NAMED_MUS.values()), reverse=True):
        if mu in named:
            out.append({"label": f"level-{named[mu]}", "spec": S.level_spec(named[mu]), "mu": mu,
                        "level": named[mu]})
        else:
            out.append({"label": f"mu{mu:g}", "spec": S.setting_spec(mu), "mu": mu, "level": None})
    cal = shipped.calibration(game_spec, base)
    if cal is not None:
        d = Path(cal["path"]).parent
        raw = json.loads((d / card["calibration"]).read_text())["spec"]     # the file names, unresolved
        out.append({"label": "level-balanced", "spec": raw, "mu": None, "level": "balanced"})
    return out


def engine_label(spec: str) -> str:
    """A reference as a person reads it: 'fairy-stockfish Skill Level=3, nodes=1000' for
    ``uci:/usr/games/fairy-stockfish,Skill Level=3,nodes=1000``; an agent spec of ours as itself."""
    kind, opts = parse_agent(spec)
    if kind not in ("uci", "gtp"):
        return spec
    words = opts.get("command") or [kind]
    rest = [f"{k}={x}" for k, x in opts.get("options") or ()]
    rest += [f"{k}={opts[k]:g}" + (" s" if k == "movetime" else "") for k in ("nodes", "depth", "movetime")
             if opts.get(k) is not None]
    return os.path.basename(str(words[0])) + (" " + ", ".join(rest) if rest else "")


# ---- games --------------------------------------------------------------------------------------

class _Stage:
    """One game's rating games in the database: which are stored, which to play, and playing them."""

    def __init__(self, game: str, db: ResultsDB, directory: Path, card: dict, seed: int, workers: int,
                 progress: bool, echo):
        self.game, self.db, self.dir, self.seed, self.workers = game, db, directory, seed, workers
        self.fingerprint = _fingerprint(card)
        self.progress, self.echo = progress, echo
        self.played = 0
        self._index = {}

    def resolve(self, spec: str) -> str:
        return shipped._resolve(spec, self.dir)

    def key(self, stage: str, a: dict, b: dict, index: int) -> str:
        fp = self.fingerprint if ("net=" in a["spec"] or "net=" in b["spec"]) else "-"
        return f"{stage}|{self.game}|{fp}|{a['label']}={a['spec']}|{b['label']}={b['spec']}|{index}|{self.seed}"

    def task(self, stage: str, a: dict, b: dict, index: int, opening_plies: int = 0) -> dict:
        key = self.key(stage, a, b, index)
        opening = (make_opening(self.game, opening_plies, f"{self.seed}|{stage}|{index // 2}")
                   if opening_plies else [])
        return {"key": key, "stage": stage, "game": self.game, "algorithm": key.split("|")[2],
                "agent_a": self.resolve(a["spec"]), "agent_b": self.resolve(b["spec"]),
                "spec_a": a["spec"], "spec_b": b["spec"], "net_a": a["label"], "net_b": b["label"],
                "index": index, "a_first": index % 2 == 0, "opening": opening,
                "seed": self.seed * 7919 + index + 1}

    def play(self, tasks: list[dict], what: str) -> None:
        have = self.db.keys(tasks[0]["stage"]) if tasks else set()
        tasks = [t for t in tasks if t["key"] not in have]
        if not tasks:
            return
        self.played += store_matches(tasks, self.workers, f"{self.game} {what}", self.db, _row, self.progress)
        self._index.pop(tasks[0]["stage"], None)

    _index: dict

    def stored(self, stage: str) -> dict:
        """{(fingerprint, "label=spec" of A, of B): [(index, A's score)]} of the stored games."""
        if stage not in self._index:
            out: dict = {}
            for r in self.db.rows(stage, self.game):
                parts = r["match_key"].split("|")
                if len(parts) != 7 or parts[6] != str(self.seed):
                    continue
                out.setdefault((parts[2], parts[3], parts[4]), []).append((int(parts[5]), (r["a_result"] + 1) / 2.0))
            self._index[stage] = out
        return self._index[stage]

    def scores(self, stage: str, a: dict, b: dict, below: int | None = None) -> list[float]:
        """A's scores (1, 1/2, 0) in the stored games of ``a`` against ``b`` (index < ``below``)."""
        _, _, fp, ka, kb, _, _ = self.key(stage, a, b, 0).split("|")
        return [s for i, s in self.stored(stage).get((fp, ka, kb), ()) if below is None or i < below]


def _row(task: dict, rec) -> dict:
    """The stored row: the table's specs (network file names, not this checkout's paths)."""
    return dict(match_row(task, rec), agent_a=task["spec_a"], agent_b=task["spec_b"])


def _pairs(stage: _Stage, kind: str, ps: list[dict], below: dict | None = None) -> list[tuple]:
    """(i, j, scores) over the stored games between ``ps`` (``below``: {label: max index})."""
    out = []
    for i, a in enumerate(ps):
        for j, b in enumerate(ps):
            if i != j:
                s = stage.scores(kind, a, b, (below or {}).get(a["label"]))
                if s:
                    out.append((i, j, s))
    return out


# ---- phase 1: rate ------------------------------------------------------------------------------

def _phase_rate(stage: _Stage, ladder: list[dict], settings: list[dict], n_games: int, rung_games: int,
                max_sims: int) -> None:
    kind = STAGES["rate"]
    for a, b in zip(ladder, ladder[1:]):
        stage.play([stage.task(kind, a, b, i) for i in range(rung_games)], f"{a['label']} vs {b['label']}")
    anchor_i = next(i for i, r in enumerate(ladder) if r.get("anchor"))
    usable = [r for r in ladder if r["sims"] <= max_sims]
    rung_elo = point_elo(len(ladder), _pairs(stage, kind, ladder), anchor_i)
    prior = 0.0
    for p in settings:
        est = prior
        for k in range((n_games + BATCH - 1) // BATCH):
            everyone = ladder + [p]
            games_before = _pairs(stage, kind, everyone, {p["label"]: k * BATCH})
            if any(i == len(ladder) for i, _, _ in games_before):
                est = point_elo(len(everyone), games_before, anchor_i)[-1]
                lowest, highest = usable[0], usable[-1]
                lo = stage.scores(kind, p, lowest, k * BATCH)
                hi = stage.scores(kind, p, highest, k * BATCH)
                if (len(lo) >= BATCH and max(lo) == 0) or (len(hi) >= BATCH and min(hi) == 1):
                    break           # lost every game to the weakest rung or won every one from the strongest
            target = min(usable, key=lambda r: abs(rung_elo[ladder.index(r)] - est))
            n = min(BATCH, n_games - k * BATCH)
            stage.play([stage.task(kind, p, target, k * BATCH + i) for i in range(n)],
                       f"{p['label']} (about {est:+.0f}) vs {target['label']}")
        games_all = _pairs(stage, kind, ladder + [p])
        if any(i == len(ladder) for i, _, _ in games_all):
            est = point_elo(len(ladder) + 1, games_all, anchor_i)[-1]
        stage.echo(f"{stage.game}: {p['label']} at about {est:+.0f}")
        prior = est


def _rate_section(stage: _Stage, ladder: list[dict], settings: list[dict], boot: int) -> dict | None:
    """The table's levels, settings, anchor and ladder from the stored rate games (None: none)."""
    kind = STAGES["rate"]
    everyone = ladder + settings
    pairs = _pairs(stage, kind, everyone)
    if not any(i >= len(ladder) for i, _, _ in pairs):
        return None
    anchor_i = next(i for i, r in enumerate(ladder) if r.get("anchor"))
    elo = elo_intervals(len(everyone), pairs, anchor_i, boot)
    counts = [0] * len(everyone)
    for i, j, s in pairs:
        counts[i] += len(s)
        counts[j] += len(s)
    levels: dict[str, dict] = {}
    curve: list[dict] = []
    for n, p in enumerate(settings, len(ladder)):
        mine = [x for i, _, s in pairs if i == n for x in s]
        if not mine:
            continue
        e, lo, hi = elo[n]
        row = {"label": p["label"], "spec": p["spec"], "elo": e, "low": min(lo, e), "high": max(hi, e),
               "games": counts[n]}
        if min(mine) == 1:          # won every game: its fitted rating is the ridge's, give a bound
            beaten = max((elo[j][0] for i, j, _ in pairs if i == n), default=e)
            row.update(elo=beaten, low=beaten, high=beaten, at_least=True,
                       note=f"won every ladder game ({counts[n]}): at least the strongest rung it beat")
        elif max(mine) == 0:        # lost every game: no rating, only a bound; left out
            continue
        if p["level"]:
            levels[p["level"]] = {k: row[k] for k in ("elo", "low", "high", "spec", "games", "note", "at_least")
                                  if k in row}
        if not row.get("at_least") and (p["mu"] is not None or p["level"] == "strongest"):
            curve.append(dict(row, **({"mu": p["mu"]} if p["mu"] is not None else {})))
    if "balanced" in levels:
        levels["adaptive"] = dict(levels["balanced"], note="the adaptive level starts at the balanced setting "
                                  "and then follows the person's results: this is its starting rating")
    curve.sort(key=lambda s: s["elo"])
    anchor = next(r for r in ladder if r.get("anchor"))
    return {"anchor": f"this project's MCTS {anchor['sims']} iterations = 0", "anchor_label": anchor["label"],
            "ladder": "this project's MCTS (mcts:iterations=N), random playouts, N = "
                      + ", ".join(str(r["sims"]) for r in ladder),
            "iterations": S.LEVEL_ITERATIONS, "levels": levels, "settings": curve}


# ---- phase 2: head to head ----------------------------------------------------------------------

def _h2h_pairs(t: dict) -> list[tuple[dict, dict]]:
    """The fixed levels by rating, each against the next stronger one; balanced against its
    neighbours by rating (it plays for an even game, so its ladder rating does not order it)."""
    order = sorted((lvl for lvl in t["levels"] if lvl != "adaptive"), key=lambda lvl: t["levels"][lvl]["elo"])
    ps = [{"label": f"level-{lvl}", "spec": t["levels"][lvl]["spec"]} for lvl in order]
    chain = [p for p in ps if p["label"] != "level-balanced"]
    pairs = list(zip(chain, chain[1:]))
    pairs += [(ps[i], ps[i + 1]) for i in range(len(ps) - 1)
              if "level-balanced" in (ps[i]["label"], ps[i + 1]["label"])]
    return pairs


def _phase_h2h(stage: _Stage, t: dict, n_games: int) -> None:
    for a, b in _h2h_pairs(t):
        stage.play([stage.task(STAGES["h2h"], a, b, i, H2H_OPENING_PLIES) for i in range(n_games)],
                   f"{a['label']} vs {b['label']}")


def _h2h_section(stage: _Stage, t: dict) -> list[dict]:
    rows = []
    for a, b in _h2h_pairs(t):
        s = stage.scores(STAGES["h2h"], a, b)
        if not s:
            continue
        ci = cluster_interval(s, lo=0.0, hi=1.0)
        rows.append({"weaker": a["label"][6:], "stronger": b["label"][6:], "games": len(s),
                     "score": round(ci.mean, 4), "low": round(ci.low, 4), "high": round(ci.high, 4),
                     "chain": "level-balanced" not in (a["label"], b["label"])})
    rows.sort(key=lambda r: (not r["chain"], r["weaker"], r["stronger"]))
    return rows


# ---- phase 3: an outside reference --------------------------------------------------------------

def _reference_players(t: dict) -> list[dict]:
    return [{"label": f"level-{lvl}", "spec": t["levels"][lvl]["spec"]}
            for lvl in S.RATED_LEVELS if lvl in t["levels"] and lvl != "adaptive"]


def _phase_reference(stage: _Stage, t: dict, references: list[str], n_games: int) -> None:
    for ref in references:
        r = {"label": "reference", "spec": ref}
        for p in _reference_players(t):
            stage.play([stage.task(STAGES["reference"], p, r, i) for i in range(n_games)],
                       f"{p['label']} vs {engine_label(ref)}")


def _reference_section(stage: _Stage, t: dict, references: list[str]) -> list[dict]:
    """One row per (level, reference) with games: the level's score against the reference. The
    references are those asked now and those already in the table."""
    asked = list(dict.fromkeys(references + [x["engine"] for x in t.get("reference") or ()]))
    rows = []
    for ref in asked:
        for p in _reference_players(t):
            s = stage.scores(STAGES["reference"], p, {"label": "reference", "spec": ref})
            if not s:
                continue
            ci = cluster_interval(s, lo=0.0, hi=1.0)
            rows.append({"level": p["label"][6:], "engine": ref, "about": engine_label(ref), "games": len(s),
                         "score": round(ci.mean, 4), "low": round(ci.low, 4), "high": round(ci.high, 4)})
    return rows


def reference_text(row: dict) -> str:
    """'scores 0.45 [0.30, 0.61] against fairy-stockfish Skill Level=3, nodes=1000 (20 games)'."""
    return (f"scores {row['score']:.2f} [{row['low']:.2f}, {row['high']:.2f}] against {row['about']} "
            f"({row['games']} games)")


# ---- the table ----------------------------------------------------------------------------------

def write_table(path: Path, game: str, sections: dict, old: dict | None, db_path) -> dict:
    """The table: ``old`` with ``sections`` (each computed from its phase's games) put in, checked
    against ``descent.strength.TABLE`` before it is written (atomically)."""
    t = dict(old or {})
    if sections.get("rate") is not None:
        for k in ("check",):            # a measurement of the earlier ratings, not of these
            t.pop(k, None)
        t.update(sections["rate"])
    if not t.get("levels"):
        raise LevelsError(f"{game}: no rated level yet; run the rate phase first (`descent rate-levels {game}`)")
    if sections.get("h2h"):
        t["head_to_head"] = sections["h2h"]
    if sections.get("reference"):
        t["reference"] = sections["reference"]
    mine = f"descent rate-levels (games in {db_path})"
    if sections.get("rate") is not None or not t.get("source"):
        t["source"] = mine
    else:                           # the rating came from elsewhere: say what this command added
        t["source"] = f"{t['source'].split('; ')[0]}; then {mine}"
    t.update(format=S.FORMAT, game=game, date=time.strftime("%Y-%m-%d"))
    S.TABLE(t, f"rating table {path}", S.StrengthError)
    write_json(path, t)
    return t


def _fill_card(directory: Path, card: dict, t: dict) -> None:
    """Each level's rating into the shipped model card (its ``strength`` entry)."""
    card = dict(card, strength=S.card_levels(t))
    write_json(directory / shipped.CARD_FILE, card)
    shipped.verify(directory)


def rate_levels(game: str, db_path=None, base=None, phases=PHASES, n_games: int = 80, rung_games: int = 40,
                sims=DEFAULT_RUNGS, anchor: int = DEFAULT_ANCHOR, max_sims: int = 100_000, h2h_games: int = 40,
                references=(), reference_games: int = 20, boot: int = 300, seed: int = 0, workers: int = 1,
                progress: bool = True, echo=print) -> dict:
    """Play what is missing of each phase in ``phases``, then write the game's rating table beside
    its shipped card (and the levels' ratings into the card). Returns {"table", "path", "played"}."""
    game = games.load(game).spec
    for p in phases:
        if p not in PHASES:
            raise LevelsError(f"phase {p!r}: expected {', '.join(PHASES)}")
    for ref in references:
        parse_agent(ref)
    if "reference" in phases and not references:
        raise LevelsError("the reference phase needs an opponent: --reference SPEC, e.g. "
                          "'uci:/usr/games/fairy-stockfish,Skill Level=3,nodes=1000'")
    directory, card = _entry(game, base)
    path = directory / S.TABLE_FILE
    old = S.load_table(path, game) if path.is_file() else None
    ladder = rungs(sims, anchor)
    for r in ladder:
        r["anchor"] = r["sims"] == anchor
    settings = players(game, base)
    db_path = Path(db_path or default_db(game, base))
    if not db_path.is_absolute() and not str(db_path).startswith(".."):
        db_path = Path(os.path.normpath(db_path))
    db = ResultsDB(db_path)
    try:
        stage = _Stage(game, db, directory, card, seed, workers, progress, echo)
        if "rate" in phases:
            _phase_rate(stage, ladder, settings, n_games, rung_games, max_sims)
        sections: dict = {"rate": _rate_section(stage, ladder, settings, boot)}
        t = write_table(path, game, sections, old, db_path)
        if "h2h" in phases:
            _phase_h2h(stage, t, h2h_games)
        sections["h2h"] = _h2h_section(stage, t)
        if "reference" in phases:
            _phase_reference(stage, t, list(references), reference_games)
        sections["reference"] = _reference_section(stage, t, list(references))
        t = write_table(path, game, sections, old, db_path)
        _fill_card(directory, card, t)
        return {"table": t, "path": path, "played": stage.played, "db": db_path}
    finally:
        db.close()
