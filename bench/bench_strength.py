"""Rate every named level of ``descent play`` and the continuous ``--elo`` setting on the ladder's Elo scale.

Uses ``research/ladder.py``'s machinery (players, ``play_game`` with both engines checked at
every ply for OpenSpiel's rungs, the resumable results file, the Bradley-Terry fit): the ratings are
fitted together with all of the ladder's own games (``research/results_ladder.json``), so the scale is
the ladder's (OpenSpiel's MCTS at 100 simulations = 0; reversi 6x6: this project's MCTS at 100).

Three phases per game, each resumable (games already recorded in ``--json`` are not replayed):

1. **rate**: two low rungs (10 and 30 simulations, the ladder's engine) play their neighbours
   (``--rung-games`` games a pair) so that weak settings have opponents; then every setting of the
   table (``descent.strength``: the Gaussian curve at ``mu`` in ``CURVE_MUS``, easy/medium/hard,
   strongest's games are the ladder's own, balanced at the shipped calibration) plays ``--games``
   games in batches of 10 (seats alternating), each batch against the rung nearest its current
   rating (a staircase: the first guess is the previous setting's rating), skipping rungs slower than
   ``--max-sims``. Then the table is fitted (bootstrap 95% intervals) and written to
   ``checkpoints/shipped/<slug>/strength.json``.
2. **h2h**: the named levels by rating, each against the next stronger one, ``--h2h-games`` games.
3. **check**: ``--check-points`` ratings evenly spread over the table's range; for each,
   ``descent.strength.level_for_elo`` picks a setting, and a separate run of it (new label, new
   seeds) is fitted on the same rung scale: its measured rating against the table's. The separate
   run plays **the same rungs, the same number of games each, as the rating run** of that setting
   (``mirror_schedule``). A staircase of its own (the first check's design) walks to other rungs, so
   the difference then also holds the error of the rung scale between those rungs and the setting's
   departure from Bradley-Terry against rungs of other strengths (a Gaussian-noise player is not
   one Elo against MCTS rungs of every size): against breakthrough's medium level, 0.32 against
   mcts100 in the rating run and 0.47 against mcts30 in the check gave ratings 227 Elo apart. With
   the same rungs, what is left is the games' own sampling noise. The first (staircase) check's
   games stay under ``<game> check``; this one's are under ``<game> check same-rungs``, labelled
   ``recheck-<setting>`` (other seeds than the first check's).

    python -m bench.bench_strength --game 'reversi(size=6)' --phase rate,h2h,check
    python -m bench.bench_strength --report          # tables only, no games
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

from research import ladder as L                            # noqa: E402
from descent import strength as S                          # noqa: E402

DEFAULT_JSON = os.path.join(HERE, "results_strength.json")
LOW_RUNGS = ("1", "3", "10", "30")
BATCH = 10


def ladder_entry(spec: str) -> dict:
    return L.load_results(L.DEFAULT_JSON)["games"][spec]


def shipped_dir(spec: str):
    from descent import shipped
    found = shipped.find(spec)
    if found is None:
        raise SystemExit(f"error: {spec} has no shipped network")
    return found


def _rel(path) -> str:
    return os.path.relpath(str(path), ROOT)


def settings_of(spec: str) -> list[dict]:
    """The players of the table: {label, agent (paths relative to the repository), table_spec, mu,
    level}."""
    from descent import shipped
    d, card = shipped_dir(spec)
    net = _rel(d / S.NET_TOKEN)
    out = []
    named = {mu: lvl for lvl, mu in S.NAMED_MUS.items()}
    for mu in sorted(set(S.CURVE_MUS) | set(S.NAMED_MUS.values()), reverse=True):
        if mu in named:
            t = S.level_spec(named[mu])
            out.append({"label": f"level-{named[mu]}", "table_spec": t, "mu": mu, "level": named[mu]})
        else:
            t = S.setting_spec(mu)
            out.append({"label": f"mu{mu:g}", "table_spec": t, "mu": mu})
    cal = shipped.calibration(spec)
    if cal is not None:
        raw = json.load(open(d / card["calibration"]))["spec"]
        out.append({"label": "level-balanced", "table_spec": raw, "mu": None, "level": "balanced"})
    for p in out:
        p["agent"] = p["table_spec"].replace(f"net={S.NET_TOKEN}", f"net={net}")
        p["kind"] = "net"
    return out


def strongest_label(spec: str, ladder: dict) -> str | None:
    """The ladder's label of the shipped final network (its games are the strongest level's)."""
    from descent import shipped
    d, card = shipped_dir(spec)
    sha = card["networks"]["final"]["sha256"]
    for label, p in ladder["players"].items():
        if p["kind"] == "net" and os.path.isfile(os.path.join(ROOT, p["path"])) and \
                shipped.sha256(os.path.join(ROOT, p["path"])) == sha:
            return label
    return None


def merged(ladder: dict, *entries) -> dict:
    m = {"players": dict(ladder["players"]), "matches": dict(ladder["matches"]), "anchor": ladder["anchor"]}
    for e in entries:
        m["players"].update(e.get("players", {}))
        for k, recs in e.get("matches", {}).items():
            m["matches"][k] = recs
    return m


def point_elo(entry: dict) -> dict:
    """Point ratings only (no bootstrap): the staircase's guide."""
    from descent.ratings import ELO, fit
    labels = list(entry["players"])
    idx = {l: i for i, l in enumerate(labels)}
    games = [(idx[a], idx[b], r["score"]) for k, recs in entry["matches"].items() if recs
             for a, b in [k.split("|")] for r in recs]
    r, _ = fit(len(labels), games)
    a = idx[entry["anchor"]]
    return {l: float((r[i] - r[a]) * ELO) for l, i in idx.items()}


def rung_candidates(entry: dict, max_sims: int) -> list[dict]:
    return [p for p in L._rungs(entry) if p["sims"] <= max_sims]


def staircase(path, data, key, spec, ladder, player, n_games, max_sims, prior, workers, extra=()):
    """Play ``player`` (already in data["games"][key]["players"]) ``n_games`` games in batches of
    ``BATCH``, each against the rung nearest its current rating; returns its last point rating."""
    entry = data["games"][key]
    label = player["label"]
    while True:
        mine = {k: v for k, v in entry["matches"].items() if k.startswith(label + "|")}
        played = sum(len(v) for v in mine.values())
        m = merged(ladder, *extra, {"players": {label: player}, "matches": mine})
        rungs = rung_candidates(m, max_sims)
        if played:
            est = point_elo(m)[label]
        else:
            est = prior
        if played >= n_games:
            return est
        rung_elo = point_elo(merged(ladder, *extra))
        rungs = [r for r in rungs if r["label"] in rung_elo]
        # all lost against the weakest rung or all won against the strongest: nothing more to learn
        lowest = min(rungs, key=lambda r: rung_elo[r["label"]])["label"]
        highest = max(rungs, key=lambda r: rung_elo[r["label"]])["label"]
        lo_recs = mine.get(L.pair_key(label, lowest), [])
        hi_recs = mine.get(L.pair_key(label, highest), [])
        if len(lo_recs) >= BATCH and all(r["score"] == 0 for r in lo_recs):
            return est
        if len(hi_recs) >= BATCH and all(r["score"] == 1 for r in hi_recs):
            return est
        target = min(rungs, key=lambda r: abs(rung_elo[r["label"]] - est))
        have = len(mine.get(L.pair_key(label, target["label"]), []))
        tasks = L.schedule(entry, spec, [(player, target)], have + BATCH)
        print(f"{key}: {label} (now {est:+.0f}) plays {target['label']} ({rung_elo[target['label']]:+.0f})",
              flush=True)
        run_inline(path, data, key, tasks, workers)


def run_inline(path, data, key, tasks, workers=1):
    """``research.ladder.run_tasks`` in this process (the agents loaded once instead of once per
    chunk; games in flight with one network call per round, ``research.ladder.play_tasks``): the same
    task tuples, records and results file."""
    if workers > 1:
        return L.run_tasks(path, data, key, tasks, workers)
    entry = data["games"][key]
    last = time.monotonic()
    for n, (a, b, rec) in enumerate(L.play_tasks(tasks), 1):
        entry["matches"].setdefault(L.pair_key(a, b), []).append(rec)
        entry["matches"][L.pair_key(a, b)].sort(key=lambda r: r["index"])
        if time.monotonic() - last > 30 or n == len(tasks):
            L.save_results(path, data)
            last = time.monotonic()
            print(f"  {key}: {n}/{len(tasks)} ({a} vs {b}: {rec['score']}, {rec['seconds']} s)", flush=True)


def _entry(data, key):
    return data["games"].setdefault(key, {"players": {}, "matches": {}})


def _retire(entry: dict, player: dict, keep_as: str | None = None, quiet: bool = False) -> bool:
    """Record ``player`` under its label in one results entry. When the label's recorded agent is
    another (the balanced level after a new shipped calibration), its earlier games are not this
    player's: with ``keep_as`` they stay under ``label@keep_as`` (still in the fit, as another
    player), else they are dropped. Returns whether the agent changed."""
    label = player["label"]
    old = entry["players"].get(label)
    changed = old is not None and old.get("agent") != player["agent"]
    if changed:
        kept = f"{label}@{keep_as}" if keep_as else None
        moved = 0
        for k in [k for k in entry["matches"] if label in k.split("|")]:
            recs = entry["matches"].pop(k)
            moved += len(recs)
            if kept:
                entry["matches"]["|".join(kept if x == label else x for x in k.split("|"))] = recs
        if kept:
            entry["players"][kept] = dict(old, label=kept)
        if not quiet:
            print(f"{label}: its agent changed ({old.get('agent')} -> {player['agent']}): {moved} earlier "
                  f"game(s) {'kept as ' + kept if kept else 'dropped'}", flush=True)
    entry["players"][label] = player
    return changed


def _set_player(path: str, data: dict, key: str, player: dict, keep_as: str | None = None) -> None:
    """``_retire`` in ``data`` and, when the agent changed, in the results file at once (under its
    lock): ``research.ladder.save_results`` merges the file's games back into ``data``, so the old
    agent's games must leave the file before the next save. The new agent's games are never
    counted with the old one's."""
    if not _retire(data["games"][key], player, keep_as):
        return
    from training import fileio
    with fileio.FileLock(L.results_lock(path), timeout=None):
        disk = L.load_results(path)
        if key in disk["games"]:
            _retire(disk["games"][key], player, keep_as, quiet=True)
            fileio.write_json(path, disk)


def phase_rate(args, data, spec, ladder):
    key = spec
    entry = _entry(data, key)
    rungs = [L.rung_player(spec, x) for x in LOW_RUNGS] + [ladder["players"][ladder["anchor"]]]
    for p in rungs:
        entry["players"].setdefault(p["label"], p)
    pairs = [(rungs[i], rungs[i + 1]) for i in range(len(rungs) - 1)]
    run_inline(args.json, data, key, L.schedule(entry, spec, pairs, args.rung_games), args.workers)
    strongest = strongest_label(spec, ladder)
    prior = ladder.get("elo", {}).get(strongest, {}).get("elo") or point_elo(ladder).get(strongest, 500.0)
    low = {"players": {p["label"]: p for p in rungs[:-1]},
           "matches": {k: v for k, v in entry["matches"].items() if k.startswith("mcts")}}
    checked = {l[len("check-"):] for l in data["games"].get(f"{spec} check", {}).get("players", {})}
    for p in settings_of(spec):
        _set_player(args.json, data, key, p, keep_as=time.strftime("%Y%m%d"))
        if args.only_checked and p["label"] not in checked:
            continue
        prior = staircase(args.json, data, key, spec, ladder, p, args.games, args.max_sims, prior - 100,
                          args.workers, extra=(low,))
        print(f"{spec}: {p['label']} at about {prior:+.0f}", flush=True)
    L.save_results(args.json, data)


def fit_table(data, spec, ladder, boot):
    entry = data["games"][spec]
    m = merged(ladder, entry)
    elo = L.elo_table(m, boot=boot)
    return elo


def write_table(args, data, spec, ladder):
    entry = data["games"].get(spec)
    if not entry:
        return None
    elo = fit_table(data, spec, ladder, args.boot)
    d, card = shipped_dir(spec)
    strongest = strongest_label(spec, ladder)
    counts = {}
    for k, recs in merged(ladder, entry)["matches"].items():
        for l in k.split("|"):
            counts[l] = counts.get(l, 0) + len(recs)
    rungs_all = L._rungs(merged(ladder, entry))
    top_rung = max((r for r in rungs_all if r["label"] in elo), key=lambda r: elo[r["label"]]["elo"])

    def row(label, spec_text, mu=None, note=None):
        e = elo[label]
        out = {"label": label, "spec": spec_text, "elo": e["elo"], "low": min(e["lo"], e["elo"]),
               "high": max(e["hi"], e["elo"]), "games": counts.get(label, 0)}
        if mu is not None:
            out["mu"] = mu
        if note:
            out["note"] = note
        return out

    def bounded(label):
        """Rated only when it lost a game to some rung and won one from some rung (else its
        rating is the fit's ridge, a bound, not a rating)."""
        scores = [r["score"] for k, recs in merged(ladder, entry)["matches"].items()
                  if k.startswith(label + "|") for r in recs]
        return scores and min(scores) < 1 and max(scores) > 0

    levels, settings = {}, []
    for p in settings_of(spec):
        if p["label"] not in elo or not bounded(p["label"]):
            continue
        r = row(p["label"], p["table_spec"], p["mu"])
        if p.get("level"):
            levels[p["level"]] = {k: r[k] for k in ("elo", "low", "high", "spec", "games")}
        if p["mu"] is not None:
            settings.append(r)
    if strongest and strongest in elo:
        unbeaten = not bounded(strongest)
        r = row(strongest, S.level_spec("strongest"))
        if unbeaten:
            # its fitted rating is only the fit's ridge: give the strongest rung it beat, as a bound
            beaten = [k.split("|")[1] for k in merged(ladder, entry)["matches"] if k.startswith(strongest + "|")]
            top = max(beaten, key=lambda l: elo[l]["elo"])
            r.update(elo=elo[top]["elo"], low=elo[top]["elo"], high=elo[top]["elo"], at_least=True,
                     note=f"won every ladder game ({r['games']}): at least the strongest rung it beat ({top})")
        r["label"] = "strongest"
        levels["strongest"] = {k: r[k] for k in ("elo", "low", "high", "spec", "games", "note", "at_least")
                               if k in r}
        if not unbeaten:
            settings.append(r)
    if "balanced" in levels:
        levels["adaptive"] = dict(levels["balanced"], note="the adaptive level starts at the balanced setting "
                                  "and then follows the person's results: this is its starting rating")
    settings.sort(key=lambda s: s["elo"])
    anchor_p = ladder["players"][ladder["anchor"]]
    outside = L.OPENSPIEL.get(spec)
    anchor = (f"OpenSpiel MCTS {anchor_p['sims']} simulations = 0" if outside else
              f"this project's MCTS {anchor_p['sims']} iterations = 0")
    table = {"format": S.FORMAT, "game": spec, "anchor": anchor, "anchor_label": ladder["anchor"],
             "ladder": ladder["ladder"], "iterations": S.LEVEL_ITERATIONS, "levels": levels,
             "settings": settings, "source": "bench/results_strength.json (bench/bench_strength.py)",
             "date": time.strftime("%Y-%m-%d")}
    old = d / S.TABLE_FILE
    if old.is_file():
        prev = json.load(open(old))
        for k in ("check", "head_to_head"):
            if k in prev:
                table[k] = prev[k]
    from training import fileio
    fileio.write_json(old, table)
    S.load_table(old, spec)
    print(f"{spec}: table written to {_rel(old)}", flush=True)
    return table


def phase_h2h(args, data, spec):
    t = S.load_table(shipped_dir(spec)[0] / S.TABLE_FILE, spec)
    key = f"{spec} head-to-head"
    entry = _entry(data, key)
    net = _rel(shipped_dir(spec)[0] / S.NET_TOKEN)
    order = sorted((lvl for lvl in t["levels"] if lvl != "adaptive"), key=lambda l: t["levels"][l]["elo"])
    players = []
    for lvl in order:
        p = {"label": f"level-{lvl}", "kind": "net",
             "agent": t["levels"][lvl]["spec"].replace(f"net={S.NET_TOKEN}", f"net={net}")}
        _set_player(args.json, data, key, p)
        players.append(p)
    # the chain of the fixed levels, each against the next stronger one; balanced (which plays for
    # an even game against whoever it meets, so its ladder rating does not order it) against its
    # neighbours by rating
    chain = [p for p in players if p["label"] != "level-balanced"]
    pairs = [(chain[i], chain[i + 1]) for i in range(len(chain) - 1)]
    pairs += [(players[i], players[i + 1]) for i in range(len(players) - 1)
              if "level-balanced" in (players[i]["label"], players[i + 1]["label"])]
    run_inline(args.json, data, key, L.schedule(entry, spec, pairs, args.h2h_games, args.opening_plies),
               args.workers)


def h2h_rows(data, spec):
    from descent.stats import cluster_interval
    entry = data["games"].get(f"{spec} head-to-head")
    if not entry:
        return []
    rows = []
    for k, recs in entry["matches"].items():
        a, b = k.split("|")
        ci = cluster_interval([r["score"] for r in recs], lo=0.0, hi=1.0)
        rows.append({"weaker": a[6:], "stronger": b[6:], "games": len(recs), "score": round(ci.mean, 4),
                     "low": round(ci.low, 4), "high": round(ci.high, 4),
                     "distinct": bool(ci.high < 0.5), "chain": "level-balanced" not in (a, b)})
    rows.sort(key=lambda r: (not r["chain"], r["weaker"], r["stronger"]))
    return rows


def check_targets(t, n):
    """``n`` ratings evenly spread over the continuous curve's range (the Gaussian settings: the
    strongest level above them is the ladder's own network, rated on rungs too slow to replay)."""
    curve = [s for s in t["settings"] if s.get("mu") is not None]
    lo, hi = curve[0]["elo"], curve[-1]["elo"]
    return [min(hi, max(lo, lo + (hi - lo) * i / (n - 1))) for i in range(n)]


def check_picks(t, spec, n):
    """{check label: (target, table setting)} for the ``n`` targets (a setting picked twice once)."""
    out = {}
    for target in check_targets(t, n):
        pick = S.level_for_elo(spec, target)
        out.setdefault(f"check-{pick['label']}", (target, next(s for s in t["settings"]
                                                                if s["label"] == pick["label"])))
    return out


CHECK_KEY = "{spec} check same-rungs"
CHECK_PREFIX = "recheck-"


def mirror_schedule(rate_entry: dict, setting_label: str) -> dict:
    """{rung label: games} of a setting's rating run: what its check run replays."""
    out = {}
    for k, recs in rate_entry["matches"].items():
        a, b = k.split("|")
        if a == setting_label and recs:
            out[b] = len(recs)
    return dict(sorted(out.items()))


def phase_check(args, data, spec, ladder):
    t = S.load_table(shipped_dir(spec)[0] / S.TABLE_FILE, spec)
    key = CHECK_KEY.format(spec=spec)
    entry = _entry(data, key)
    rate_entry = data["games"][spec]
    net = _rel(shipped_dir(spec)[0] / S.NET_TOKEN)
    old = data["games"].get(f"{spec} check", {}).get("players", {})
    by_label = {x["label"]: x for x in t["settings"]}
    if old:                         # the settings the first check picked (from the same table): kept
        picks = {lab[len("check-"):]: p["target"] for lab, p in old.items() if lab[len("check-"):] in by_label}
    else:
        picks = {label[len("check-"):]: target for label, (target, _) in check_picks(t, spec, args.check_points).items()}
    rungs = {p["label"]: p for p in rate_entry["players"].values() if p["kind"] == "rung"}
    rungs.update({l: p for l, p in ladder["players"].items() if p["kind"] == "rung"})
    for setting, target in picks.items():
        p = {"label": CHECK_PREFIX + setting, "kind": "net",
             "agent": by_label[setting]["spec"].replace(f"net={S.NET_TOKEN}", f"net={net}"),
             "target": round(target, 1)}
        entry["players"][p["label"]] = p
        for rung, n in mirror_schedule(rate_entry, setting).items():
            if rung not in rungs:
                continue
            entry["players"].setdefault(rung, rungs[rung])
            tasks = L.schedule(entry, spec, [(p, rungs[rung])], n)
            if tasks:
                print(f"{key}: {p['label']} plays {rung} ({n} games, as in its rating run)", flush=True)
                run_inline(args.json, data, key, tasks, args.workers)


def phase_check_staircase(args, data, spec, ladder):
    """The first check's design (kept to replay its games): a staircase of its own."""
    t = S.load_table(shipped_dir(spec)[0] / S.TABLE_FILE, spec)
    key = f"{spec} check"
    entry = _entry(data, key)
    rate_entry = data["games"][spec]
    low = {"players": {k: p for k, p in rate_entry["players"].items() if p["kind"] == "rung"},
           "matches": {k: v for k, v in rate_entry["matches"].items() if k.startswith("mcts")}}
    net = _rel(shipped_dir(spec)[0] / S.NET_TOKEN)
    picks = check_picks(t, spec, args.check_points)
    if entry["players"]:            # picked once, by the table of the first check run: kept
        by_label = {s["label"]: s for s in t["settings"]}
        picks = {label: (p["target"], by_label[label[6:]]) for label, p in entry["players"].items()
                 if label[6:] in by_label}
    for label, (target, setting) in picks.items():
        p = {"label": label, "kind": "net", "agent": setting["spec"].replace(f"net={S.NET_TOKEN}", f"net={net}"),
             "target": round(target, 1)}
        entry["players"][label] = p
        staircase(args.json, data, key, spec, ladder, p, args.games, args.max_sims, setting["elo"], args.workers,
                  extra=(low,))


def check_rows(data, spec, ladder, boot, t, n_points, key=None, prefix=CHECK_PREFIX):
    """The check run's rows (``key``: the same-rungs check; ``f"{spec} check"`` with prefix
    ``check-``: the first, staircase one)."""
    entry = data["games"].get(key or CHECK_KEY.format(spec=spec))
    if not entry:
        return []
    rate_entry = data["games"][spec]
    low = {"players": {k: p for k, p in rate_entry["players"].items() if p["kind"] == "rung"},
           "matches": {k: v for k, v in rate_entry["matches"].items() if k.startswith("mcts")}}
    # the same rung scale as the table's (the ladder's and the rating run's games: they tie the low
    # rungs), the checked setting rated from its own second run's games only (a separate player)
    elo = L.elo_table(merged(ladder, rate_entry, entry), boot=boot)
    rows = []
    by_label = {s["label"]: s for s in t["settings"]}
    for label, p in entry["players"].items():
        if not label.startswith(prefix):
            continue
        target, setting = p["target"], by_label.get(label[len(prefix):])
        if label in elo and setting is not None:
            e = elo[label]
            rows.append({"target": round(target, 1), "setting": label[len(prefix):], "set": setting["elo"],
                         "measured": e["elo"],
                         "low": e["lo"], "high": e["hi"], "games": sum(len(v) for k, v in entry["matches"].items()
                                                                     if k.startswith(label + "|")),
                         "error": round(e["elo"] - setting["elo"], 1)})
    rows.sort(key=lambda r: r["set"])
    return rows


def fill_card(spec: str, t: dict) -> None:
    """Each level's rating into the shipped model card (``strength`` entry; the full table is
    ``strength.json`` beside it)."""
    from descent import shipped
    from training import fileio
    d, card = shipped_dir(spec)
    card["strength"] = S.card_levels(t)
    fileio.write_json(d / shipped.CARD_FILE, card)
    shipped.verify(d)


def report(args, data):
    out = []
    from training import fileio
    for spec in L.OPENSPIEL:
        if spec not in data["games"]:
            continue
        ladder = ladder_entry(spec)
        path = shipped_dir(spec)[0] / S.TABLE_FILE
        t = write_table(args, data, spec, ladder)
        if t is None:
            continue
        h2h, chk = h2h_rows(data, spec), check_rows(data, spec, ladder, args.boot, t, args.check_points)
        stair = check_rows(data, spec, ladder, args.boot, t, args.check_points, key=f"{spec} check",
                           prefix="check-")
        if h2h:
            t["head_to_head"] = h2h

        def summary(rows):
            errs = [abs(r["error"]) for r in rows]
            return {"rows": rows, "mean_abs_error": round(sum(errs) / len(errs), 1),
                    "span": round(rows[-1]["set"] - rows[0]["set"], 1)}
        if chk:
            t["check"] = dict(summary(chk), design="the same rungs and games per rung as the rating run")
            if stair:
                t["check"]["staircase"] = dict(summary(stair), design="a staircase of its own (first check)")
        elif stair:
            t["check"] = dict(summary(stair), design="a staircase of its own")
        fileio.write_json(path, t)
        S.load_table(path, spec)
        fill_card(spec, t)
        out.append(f"\n### {spec}\n\nAnchor: {t['anchor']}. Levels at {t['iterations']} iterations a move.\n")
        out.append("| level | spec | Elo [95%] | games |\n|---|---|---|---|")
        for lvl in S.RATED_LEVELS:
            if lvl in t["levels"]:
                e = t["levels"][lvl]
                note = " (at least)" if e.get("note", "").startswith("won every") else ""
                out.append(f"| {lvl} | `{e['spec']}` | {e['elo']:+.0f} [{e['low']:+.0f}, {e['high']:+.0f}]{note} "
                           f"| {e['games']} |")
        out.append("\nContinuous setting (`--elo`): " + "; ".join(
            f"{s['label']} {s['elo']:+.0f} [{s['low']:+.0f}, {s['high']:+.0f}]" for s in t["settings"]) + ".")
        if h2h:
            out.append("\nHead-to-head (the fixed levels' chain first, then balanced): " + "; ".join(
                f"{r['weaker']} vs {r['stronger']} {r['score']:.2f} [{r['low']:.2f}, {r['high']:.2f}] "
                f"({r['games']} games{'' if r['distinct'] else ', NOT distinct'})" for r in h2h) + ".")
        if chk:
            out.append("\n| --elo | setting | set | measured [95%] | error | games |\n|---|---|---|---|---|---|")
            for r in chk:
                out.append(f"| {r['target']:+.0f} | {r['setting']} | {r['set']:+.0f} | {r['measured']:+.0f} "
                           f"[{r['low']:+.0f}, {r['high']:+.0f}] | {r['error']:+.0f} | {r['games']} |")
            out.append(f"\nMean |error| {t['check']['mean_abs_error']:.0f} Elo over a span of "
                       f"{t['check']['span']:.0f} ({t['check']['design']}).")
            if "staircase" in t["check"]:
                st = t["check"]["staircase"]
                out.append(f"The first check ({st['design']}): mean |error| {st['mean_abs_error']:.0f} Elo "
                           f"over a span of {st['span']:.0f}.")
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--game", action="append", default=[], choices=sorted(L.OPENSPIEL))
    ap.add_argument("--phase", default="rate,h2h,check",
                    help="rate, h2h, check (same rungs as the rating run), check-staircase (the first check)")
    ap.add_argument("--games", type=int, default=80, help="games per setting (batches of 10)")
    ap.add_argument("--rung-games", type=int, default=40, help="games between the low rungs and their neighbours")
    ap.add_argument("--h2h-games", type=int, default=40)
    ap.add_argument("--opening-plies", type=int, default=2, help="random opening plies of head-to-head games")
    ap.add_argument("--check-points", type=int, default=5)
    ap.add_argument("--only-checked", action="store_true",
                    help="rate: play (top up) only the settings that the check run picked")
    ap.add_argument("--max-sims", type=int, default=30000, help="slowest rung a setting may play")
    ap.add_argument("--boot", type=int, default=300)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--json", default=DEFAULT_JSON)
    ap.add_argument("--report", action="store_true")
    args = ap.parse_args(argv)
    os.chdir(ROOT)
    data = L.load_results(args.json)
    if not args.report:
        phases = set(args.phase.split(","))
        for phase in ("rate", "h2h", "check", "check-staircase"):
            if phase not in phases:
                continue
            for spec in args.game:
                ladder = ladder_entry(spec)
                if phase == "rate":
                    phase_rate(args, data, spec, ladder)
                    write_table(args, data, spec, ladder)
                elif phase == "h2h":
                    phase_h2h(args, data, spec)
                elif phase == "check":
                    phase_check(args, data, spec, ladder)
                else:
                    phase_check_staircase(args, data, spec, ladder)
                L.save_results(args.json, data)
    print(report(args, data))
    L.save_results(args.json, data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
