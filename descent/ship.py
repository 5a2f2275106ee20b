"""``descent ship``: make a shipped entry (``descent.shipped``) from a training run.

``ship(run, early, final)`` copies two milestone checkpoints of one member of ``run`` into
``checkpoints/shipped/<game-slug>/`` as ``early.weights.h5`` and ``final.weights.h5`` and writes the
model card from the milestones' records (games, examples, training seconds) and ``run.json`` (game,
seed, configuration). ``calibrate_shipped(game)`` then calibrates the balanced player on the shipped
files (Unbounded Minibal_+ with the final network against Unbounded Minimax with the early one,
``descent calibrate``'s probabilistic bisection; resumable, its game log kept in
``checkpoints/.ship-calibrations/``, which git ignores) and ships the result as ``calibration.json``.

Every file is written through ``training.fileio`` (temporary name, fsync, rename); the card is
written last, so a kill leaves the old card, which then no longer matches the new weights (one
``CheckpointError`` on use) until ``ship`` is rerun.
"""
from __future__ import annotations

import hashlib
import shlex
import time
from pathlib import Path

import games
from training import fileio, layout
from training.network import CheckpointError, load_network
from training.run import RunError, milestone_undertrained, read_milestone, read_run_record
from descent import shipped
from descent.calibrate import Settings, calibrate

SIZE_LIMIT = 20 * 1024 * 1024        # the whole checkpoints/ folder as shipped (README and entries)


def _cpu_seconds(meta: dict, cores: int) -> float:
    """The CPU seconds behind a milestone: those its training process recorded, or for a milestone
    written before they were, its training seconds x ``cores``."""
    s = meta.get("cpu_seconds")
    return float(s) if isinstance(s, (int, float)) else float(meta["train_seconds"]) * cores


def _milestone(run: Path, member: int, name: str, game: str) -> tuple[Path, dict]:
    d = layout.member_dir(run, member)
    weights, record = layout.milestone_weights(d, name), layout.milestone_record(d, name)
    if not weights.is_file() or not record.is_file():
        have = layout.milestone_names(d)
        raise RunError(f"{run}: member {member} has no milestone {name!r} "
                       f"(it has: {', '.join(have) or 'none'})")
    meta = read_milestone(record)
    if meta["game"] != game:
        raise RunError(f"{record}: a milestone of {meta['game']}, the run is of {game}")
    if not meta.get("games"):
        raise RunError(f"{record}: milestone {name!r} was written before any self-play game (untrained)")
    for k in ("examples", "train_seconds"):
        if meta.get(k) is None:
            raise RunError(f"{record}: the milestone record does not say its {k}")
    return weights, meta


def _command(run, game: str, seed: int, members: int, early: str, final: str) -> str:
    out = Path(run)
    shown = str(out) if not out.is_absolute() and ".." not in out.parts else f"runs/{out.name}"
    return (f"descent train {shlex.quote(game)} --population {members} --budget {final} "
            f"--milestones {early},{final} --seed {seed} --out {shlex.quote(shown)}")


def shipped_size(base=None) -> int:
    """Bytes of the shipped folder plus the checkpoints README (what the repository carries)."""
    base = Path(base or shipped.root())
    files = [p for p in base.rglob("*") if p.is_file()]
    readme = base.parent / "README.md"
    return sum(p.stat().st_size for p in files) + (readme.stat().st_size if readme.is_file() else 0)


def ship(run, early: str, final: str, member: int = 0, command: str | None = None, cores: int = 1,
         game: str | None = None, base=None, echo=None) -> dict:
    """Ship milestones ``early`` and ``final`` of ``member`` of the run directory ``run``; returns
    the card. ``command``: the command that trained the run (default: one rebuilt from
    ``run.json``); ``cores``: cores the member used, for CPU-hours = training seconds x cores."""
    run = Path(run)
    rec = read_run_record(run)
    spec = rec["game"]
    if game is not None and games.load(game).spec != spec:
        raise RunError(f"{run}: a run of {spec}, not of {games.load(game).spec}")
    if early == final:
        raise RunError(f"--early and --final name the same milestone {early!r}")
    if not isinstance(cores, int) or cores < 1:
        raise RunError(f"cores {cores!r}: expected a whole number >= 1")
    picked = {"early": _milestone(run, member, early, spec), "final": _milestone(run, member, final, spec)}
    if picked["early"][1]["train_seconds"] > picked["final"][1]["train_seconds"]:
        raise RunError(f"{run}: milestone {early!r} was trained longer than {final!r}: give the earlier one as --early")
    archs = {}
    for role, (weights, _) in picked.items():
        _, meta = load_network(weights)            # builds the network: the weights fit its architecture
        archs[role] = shipped._architecture(meta.get("network") or meta["config"]["network"], f"{weights}: network")
    if archs["early"] != archs["final"]:
        raise RunError(f"{run}: milestones {early!r} and {final!r} have different architectures")
    out = shipped.entry_dir(spec, base)
    old = None
    if (out / shipped.CARD_FILE).is_file():
        try:
            old = shipped.read_card(out)
        except CheckpointError:
            old = None
    networks = {}
    for role in shipped.ROLES:
        weights, meta = picked[role]
        data = weights.read_bytes()
        networks[role] = {"file": shipped.FILES[role], "member": member, "milestone": meta["milestone"],
                          "games": meta["games"], "examples": meta["examples"],
                          "train_seconds": round(float(meta["train_seconds"]), 1),
                          "cpu_hours": round(_cpu_seconds(meta, cores) / 3600, 4),
                          "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest(), "elo": None,
                          "undertrained": bool(milestone_undertrained(meta))}
    size = shipped_size(base) - sum((out / f).stat().st_size for f in (*shipped.FILES.values(), shipped.CARD_FILE,
                                                                        shipped.CALIBRATION_FILE)
                                    if (out / f).is_file())
    size += sum(n["bytes"] for n in networks.values())
    if size > SIZE_LIMIT:
        raise RunError(f"shipping {spec} would make the shipped checkpoints {size / 2**20:.1f} MB, over the "
                       f"{SIZE_LIMIT / 2**20:.0f} MB limit: ship a smaller network")
    same = old is not None and all(old["networks"][r]["sha256"] == networks[r]["sha256"] for r in shipped.ROLES)
    if old is not None and same:
        for r in shipped.ROLES:                    # an Elo measured meanwhile stays with its weights
            networks[r]["elo"] = old["networks"][r].get("elo")
    members = len(layout.member_dirs(run)) or 1
    card = {"format": shipped.FORMAT, "game": spec, "architecture": archs["final"],
            "planes_shape": list(games.load(spec).planes_shape), "networks": networks, "cores": cores,
            "command": command or _command(run, spec, rec["seed"], members, early, final),
            "source": {"run": run.name, "member": member, "milestones": {"early": early, "final": final},
                       "seed": rec["seed"], "config": rec["config"]},
            "calibration": old.get("calibration") if old is not None and same else None,
            "shipped": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    shipped.CARD(card, "model card", RunError)
    out.mkdir(parents=True, exist_ok=True)
    if not same and (out / shipped.CALIBRATION_FILE).exists():
        (out / shipped.CALIBRATION_FILE).unlink()      # made for other weights
    for role in shipped.ROLES:
        fileio.write_bytes(out / shipped.FILES[role], picked[role][0].read_bytes())
    fileio.write_json(out / shipped.CARD_FILE, card)
    shipped.verify(out)
    if echo:
        echo(f"shipped {spec}: {out} (early {early}: {networks['early']['games']} games, final {final}: "
             f"{networks['final']['games']} games; {size / 2**20:.2f} MB shipped in all)")
    return card


def _relative(value, prefix: str):
    if isinstance(value, str):
        return value.replace(prefix, "")
    if isinstance(value, dict):
        return {k: _relative(x, prefix) for k, x in value.items()}
    if isinstance(value, list):
        return [_relative(x, prefix) for x in value]
    return value


def calibrate_shipped(game: str, opponent_budget: str = "iterations=200", low: int = 1, high: int = 2000,
                      max_games: int = 400, near_games: int = 40, precision: float = 0.1, seed: int = 0,
                      base=None, work=None, echo=None) -> dict:
    """Calibrate the balanced player on the shipped networks of ``game`` and ship the result
    (``calibration.json``, named in the card). Raises ``CalibrationError``/``Unreachable`` (nothing
    shipped) like ``descent calibrate``."""
    spec = games.load(game).spec
    found = shipped.find(spec, base)
    if found is None:
        raise CheckpointError(f"no shipped networks of {spec} in {shipped.entry_dir(spec, base)}: "
                              f"run `descent ship {spec} --run RUN --early M --final M` first")
    d, card = found
    d = d.resolve()
    nets = {r: d / shipped.FILES[r] for r in shipped.ROLES}
    shas = {r: card["networks"][r]["sha256"] for r in shipped.ROLES}
    s = Settings(spec, algorithm=f"minibal_plus:net={nets['final']}",
                 against=f"minimax:{opponent_budget},net={nets['early']}", low=low, high=high,
                 max_games=max_games, near_games=near_games, precision=precision, seed=seed)
    work = Path(work) if work else Path(base or shipped.root()).resolve().parent / ".ship-calibrations"
    run = work / f"{d.name}-{shas['final'][:8]}{shas['early'][:8]}"
    run.mkdir(parents=True, exist_ok=True)
    result = calibrate(s, run, echo=echo)
    out = _relative({k: x for k, x in result.items() if k not in ("log", "path")}, str(d) + "/")
    out["networks"] = shas
    out["command"] = (f"descent ship {shlex.quote(spec)} --calibrate --opponent-budget {opponent_budget} "
                      f"--range {low}:{high} --max-games {max_games} --near-games {near_games} "
                      f"--precision {precision:g} --seed {seed}")
    fileio.write_json(d / shipped.CALIBRATION_FILE, out)
    fileio.write_json(d / shipped.CARD_FILE, dict(card, calibration=shipped.CALIBRATION_FILE))
    written = shipped.calibration(spec, base)
    if written is None:         # cannot happen: the card naming a done calibration was just written
        raise RunError(f"shipped calibration of {spec} not found after writing it")
    return written
