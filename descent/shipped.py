"""Networks shipped in the repository, so that a balanced opponent plays right after install.

Layout: ``checkpoints/shipped/<game-slug>/`` (the slug is that of ``training.run.default_run_dir``,
e.g. ``reversi_size-6``) holds

* ``final.weights.h5`` and ``early.weights.h5``: milestone checkpoints of one training run, weights
  only (HDF5 read by ``training.network``: nothing in them is executed);
* ``card.json``: the model card (``CARD``): game, architecture, per network its file, sha256, size,
  source milestone, games, examples, training seconds, CPU-hours and Elo (null until measured), the
  command that trained it and the run it came from;
* ``calibration.json`` (optional): the balanced player's budget found by ``descent calibrate``
  (Unbounded Minibal_+ with the final network against Unbounded Minimax with the early one), the
  network paths in it written as the file names above and resolved here on reading.

``descent ship`` (``descent.ship``) makes an entry from a run directory. ``best_network`` falls back
on the shipped final network when the user has no trained network of the game; the balanced and
adaptive levels then start from the shipped calibration. Every use of a shipped file first checks
it against its card (``verify``): a card that does not match its weights (game, architecture,
sha256) is one ``CheckpointError``.
"""
from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import games
from games import validate as v
from games.errors import GameError
from training.architecture import Architecture
from training.network import CheckpointError, WEIGHTS_META, parse_meta, read_h5
from training.run import default_run_dir
from descent.resources import SHIPPED_DIR

SHIPPED_ROOT = SHIPPED_DIR
CARD_FILE = "card.json"
CALIBRATION_FILE = "calibration.json"
FORMAT = "descent-card-1"
ROLES = ("final", "early")
FILES = {role: f"{role}.weights.h5" for role in ROLES}

_SHA = v.Where(v.Str(64), lambda s: None if re.fullmatch(r"[0-9a-f]{64}", s) else "is not a sha256 hex digest")
_NAME = v.Where(v.Str(128, empty=False),
                lambda s: None if s in FILES.values() else f"must be one of {', '.join(FILES.values())}")
NETWORK_CARD = v.Record({"file": _NAME, "sha256": _SHA, "bytes": v.Int(1, 10 ** 10),
                         "milestone": v.Str(64, empty=False), "games": v.Int(0, v.MAX_COUNT),
                         "examples": v.Int(0, 10 ** 15), "train_seconds": v.Real(0.0, 1e10)},
                        {"member": v.Int(0, 100_000), "cpu_hours": v.Opt(v.Real(0.0, 1e10)),
                         "undertrained": v.Bool(), "elo": v.Any_()})
CARD = v.Record({"format": v.Str(64, choices=(FORMAT,)), "game": v.Str(256, empty=False),
                 "architecture": v.Map(v.Any_()),
                 "networks": v.Where(v.Map(NETWORK_CARD),
                                     lambda d: None if set(d) == set(ROLES) else
                                     f"must hold exactly the networks {', '.join(ROLES)}"),
                 "command": v.Str(4096, empty=False)},
                {"planes_shape": v.List(v.Int(1, 4096), 3, 3), "calibration": v.Opt(v.Str(128)),
                 "cores": v.Int(1, 100_000), "source": v.Map(v.Any_()), "elo": v.Any_()})


def root() -> Path:
    return Path(SHIPPED_ROOT)


def entry_dir(game_spec: str, base=None) -> Path:
    """Where the shipped networks of ``game_spec`` live."""
    return Path(base or root()) / default_run_dir(game_spec).name


def sha256(path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def read_card(directory) -> dict:
    """The checked model card of a shipped entry (``CheckpointError`` naming the entry)."""
    return v.load_json(Path(directory) / CARD_FILE, CARD, CheckpointError, f"model card {Path(directory) / CARD_FILE}")


def weights_meta(path) -> dict:
    """The checked metadata of a weights-only checkpoint, read without building the network."""
    path = Path(path)
    with read_h5(path) as f:
        fmt, raw = f.attrs.get("format"), f.attrs.get("meta")
        fmt = fmt.decode("ascii", "replace") if isinstance(fmt, bytes) else fmt
        if fmt != "descent-weights-1" or not isinstance(raw, (str, bytes)):
            raise CheckpointError(f"{path}: not a weights-only descent checkpoint (format {fmt!r})")
        return parse_meta(raw, WEIGHTS_META, f"checkpoint {path}: meta")


def _architecture(meta: dict, where: str) -> dict:
    return Architecture.from_meta(meta, CheckpointError, where).to_meta()


_VERIFIED: dict = {}


def verify(directory, roles=ROLES) -> dict:
    """The card of a shipped entry after checking it against its weights: the game spec is a game's
    canonical spec, and each network's file has the card's sha256 and size, is of the card's game
    and has the card's architecture (and planes shape). ``CheckpointError`` (one line) otherwise."""
    directory = Path(directory)
    card = read_card(directory)
    where = f"model card {directory / CARD_FILE}"
    try:
        spec = games.load(card["game"]).spec
    except GameError as exc:
        raise CheckpointError(v.one_line(f"{where}: game: {exc}")) from None
    if spec != card["game"]:
        raise CheckpointError(f"{where}: game {card['game']!r} is not a canonical spec (expected {spec!r})")
    arch = _architecture(card["architecture"], f"{where}: architecture")
    for role in roles:
        net = card["networks"][role]
        if net["file"] != FILES[role]:
            raise CheckpointError(f"{where}: networks.{role}.file is {net['file']!r}, expected {FILES[role]!r}")
        path = directory / net["file"]
        if not path.is_file():
            raise CheckpointError(f"{where}: the {role} network {path} is missing")
        stat = path.stat()
        key = (str(path.resolve()), stat.st_mtime_ns, stat.st_size, json.dumps(card, sort_keys=True))
        if key in _VERIFIED:
            continue
        if stat.st_size != net["bytes"]:
            raise CheckpointError(f"{where}: {path.name} has {stat.st_size} bytes, the card says {net['bytes']}")
        if sha256(path) != net["sha256"]:
            raise CheckpointError(f"{where}: {path.name} does not match the card's sha256 (the file was changed "
                                  f"or the card belongs to other weights)")
        meta = weights_meta(path)
        if meta.get("game") != card["game"]:
            raise CheckpointError(f"{where}: {path.name} is a network of {meta.get('game')}, the card says "
                                  f"{card['game']}")
        net_meta = meta.get("network") or meta.get("config", {}).get("network")
        if net_meta is None or _architecture(net_meta, f"{path}: meta.network") != arch:
            raise CheckpointError(f"{where}: {path.name} has the architecture {net_meta}, the card says {arch}")
        shape = meta.get("planes_shape")
        if card.get("planes_shape") and shape and list(shape) != list(card["planes_shape"]):
            raise CheckpointError(f"{where}: {path.name} has planes shape {shape}, the card says "
                                  f"{card['planes_shape']}")
        _VERIFIED[key] = True
    return card


def is_shipped(path) -> bool:
    """Whether ``path`` names a file of a shipped entry."""
    if not path:
        return False
    try:
        return Path(path).resolve().parent.parent == root().resolve()
    except (OSError, ValueError):
        return False


def check_network(path) -> None:
    """Before a network file is loaded: when it lies in a shipped entry (a ``card.json`` beside it),
    check it against the card (``verify``); ``CheckpointError`` when it does not match."""
    path = Path(path)
    directory = path.parent
    if not (directory / CARD_FILE).is_file():
        return
    roles = [r for r in ROLES if FILES[r] == path.name]
    if not roles:
        raise CheckpointError(f"{path}: a file beside a model card that the card does not list "
                              f"(expected {', '.join(FILES.values())})")
    verify(directory, roles)


def entries(base=None) -> list[tuple[Path, dict]]:
    """Every shipped entry (directory, card checked against its weights), in name order."""
    base = Path(base or root())
    if not base.is_dir():
        return []
    return [(d, verify(d)) for d in sorted(p.parent for p in base.glob(f"*/{CARD_FILE}"))]


def find(game_spec: str, base=None) -> tuple[Path, dict] | None:
    """The shipped entry of ``game_spec`` (directory, verified card), or None."""
    d = entry_dir(game_spec, base)
    if not (d / CARD_FILE).is_file():
        return None
    card = verify(d)
    if card["game"] != game_spec:
        raise CheckpointError(f"model card {d / CARD_FILE}: a card of {card['game']}, found for {game_spec}")
    return d, card


def specs_for(game: str, base=None) -> list[str]:
    """The specs of the shipped networks of the game named ``game`` (a name such as ``havannah``
    or any spec of it), in name order: what to suggest to a user whose size has no network."""
    name = game.split("(")[0].strip()
    return [card["game"] for _, card in entries(base) if card["game"].split("(")[0] == name]


def network(game_spec: str, role: str = "final", base=None) -> str | None:
    """The path of the shipped ``role`` network of ``game_spec``, or None."""
    found = find(game_spec, base)
    return str(found[0] / FILES[role]) if found else None


def listing(game: str | None = None, base=None) -> list[dict]:
    """Rows for ``descent checkpoints`` (the keys of ``training.run.list_checkpoints`` plus
    ``shipped``: the role), optionally of one game (a spec, or a game name)."""
    rows = []
    for d, card in entries(base):
        if game is not None and card["game"] != game and card["game"].split("(")[0] != game:
            continue
        for role in ROLES:
            net = card["networks"][role]
            rows.append({"run": str(d), "game": card["game"], "member": net.get("member", 0),
                         "milestone": net["milestone"], "games": net["games"], "examples": net["examples"],
                         "undertrained": net.get("undertrained", False), "train_seconds": net["train_seconds"],
                         "path": str(d / net["file"]), "exists": True, "shipped": role,
                         "cpu_hours": net.get("cpu_hours"), "elo": net.get("elo")})
    return rows


_NET_TOKEN = re.compile(r"(?<=net=)(" + "|".join(re.escape(f) for f in FILES.values()) + r")(?=,|$)")


def _resolve(value, directory: Path):
    if isinstance(value, str):
        return _NET_TOKEN.sub(lambda m: str(directory / m.group(1)), value)
    if isinstance(value, dict):
        return {k: _resolve(x, directory) for k, x in value.items()}
    if isinstance(value, list):
        return [_resolve(x, directory) for x in value]
    return value


CALIBRATION = v.Record({"status": v.Str(32), "game": v.Str(256, empty=False), "spec": v.Str(4096, empty=False),
                        "unit": v.Str(32, choices=("iterations", "time")),
                        "budget": v.Where(v.Any_(), lambda x: None if isinstance(x, (int, float)) and not
                                          isinstance(x, bool) and 0 < x < 1e10 else "must be a positive number"),
                        "against": v.Str(4096, empty=False)})


def calibration(game_spec: str, base=None) -> dict | None:
    """The shipped calibration of ``game_spec`` (the ``descent calibrate`` result, its network file
    names resolved to this checkout's paths, ``shipped: True``), or None."""
    found = find(game_spec, base)
    if not found or not found[1].get("calibration"):
        return None
    d, card = found
    path = d / card["calibration"]
    cal = v.load_json(path, CALIBRATION, CheckpointError, f"shipped calibration {path}")
    if cal["game"] != game_spec or cal["status"] != "done":
        raise CheckpointError(f"shipped calibration {path}: a {cal['status']} calibration of {cal['game']}, "
                              f"expected a done one of {game_spec}")
    made_for = cal.get("networks")
    if made_for != {r: card["networks"][r]["sha256"] for r in ROLES}:
        raise CheckpointError(f"shipped calibration {path}: made for other weights than the card's; "
                              f"rerun `descent ship {game_spec} --calibrate`")
    return dict(_resolve(cal, d), path=str(path), shipped=True)


def _rating_text(elo) -> str:
    """A network's rating as the README's table shows it."""
    if not isinstance(elo, dict) or elo.get("elo") is None:
        return "not rated"
    scores = elo.get("scores") or {}
    if scores and all(s[0] >= 1.0 for s in scores.values()):
        top = max(scores, key=lambda k: int(re.sub(r"\D", "", k) or 0))
        games = sum(s[3] for s in scores.values())
        if elo.get("at_least"):
            return f"at least {elo['elo']:+,.0f} (unbeaten: won all {games} games up to {top})"
        return f"unbeaten: above the top rung ({top}, {games} games won)"
    return f"{elo['elo']:+,.0f} [{elo['low']:+,.0f}, {elo['high']:+,.0f}]"


def markdown_table(base=None) -> str:
    """The README's table of the shipped networks, made from their model cards (and calibrations):
    spec, milestone, CPU-hours, Elo with its 95% interval (anchor: MCTS with 100 simulations = 0)
    and the balanced level's calibrated budget. ``tests/test_newcomer.py`` checks that the README
    holds exactly this table."""
    rows = ["| game | network | milestone | CPU-hours | Elo (MCTS 100 = 0) | balanced budget |",
            "|---|---|---|---|---|---|"]
    for _d, card in entries(base):
        try:
            cal = calibration(card["game"], base)
        except CheckpointError:
            cal = None
        budget = f"{cal['unit']}={cal['budget']}" if cal else "none"
        for role in ROLES:
            net = card["networks"][role]
            hours = "?" if net.get("cpu_hours") is None else f"{net['cpu_hours']:.2f}"
            rows.append(f"| `{card['game']}` | {role} | {net['milestone']} | {hours} | "
                        f"{_rating_text(net.get('elo'))} | {budget if role == 'final' else ''} |")
    return "\n".join(rows)
