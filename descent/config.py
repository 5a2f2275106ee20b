"""Per-game configuration files (``configs/<game>.toml``), read with ``tomllib`` and validated.

Every key is declared in ``SCHEMA`` with its type, default and meaning; an unknown section or key, a
value of the wrong type or a game spec that does not load is a ``ConfigError`` naming the file and
the key. Later stages (training, ranking, evaluation) add their sections here.
"""
from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import games
from games.errors import GameError

CONFIG_DIR = Path(__file__).resolve().parent.parent / "configs"


class ConfigError(GameError):
    """A configuration file that is missing, malformed or has a bad key or value."""


@dataclass(frozen=True)
class Key:
    type: type
    default: Any
    help: str
    min: float | None = None
    choices: tuple | None = None
    max: float | None = None


SCHEMA: dict[str, dict[str, Key]] = {
    "game": {
        "spec": Key(str, None, "the game and its parameters, e.g. 'reversi(size=6)'"),
    },
    "tour": {
        "perft_depth": Key(int, 3, "perft depth run by `descent tour`", min=1),
        "random_games": Key(int, 1000, "random games played by `descent tour`", min=1),
    },
    "network": {
        "filters": Key(int, 32, "convolution filters per layer", min=1),
        "blocks": Key(int, 2, "residual blocks (two 3x3 convolutions each)", min=0),
        "head_units": Key(int, 64, "units of the dense layer of the value head", min=1),
    },
    "selfplay": {
        "iterations": Key(int, 50, "Descent iterations per move (used when time = 0)", min=1),
        "time": Key(float, 0.0, "seconds of search per move (0: use iterations)", min=0.0),
        "exploration": Key(str, "ordinal", "move choice in self-play", choices=("ordinal", "epsilon")),
        "epsilon": Key(float, 0.1, "probability of a random move (exploration = epsilon)", min=0.0,
                       max=1.0),
        "exploration_floor": Key(float, 0.05, "minimum of e = t / T in the ordinal distribution",
                                 min=0.0, max=1.0),
        "max_nodes": Key(int, 2_000_000, "memory cap of one game's search tree (states)", min=16),
    },
    "training": {
        "replay_games": Key(int, 100, "replay window mu: examples of the last mu games", min=1),
        "sample_fraction": Key(float, 0.04, "sigma: fraction of the memory sampled per update",
                               min=0.0, max=1.0),
        "min_sample": Key(int, 128, "at least this many examples per update", min=1),
        "batch_size": Key(int, 128, "minibatch size", min=1),
        "learning_rate": Key(float, 1e-3, "Adam learning rate", min=0.0),
        "augment": Key(bool, True, "augment with the game's exact symmetries"),
    },
    "run": {
        "population": Key(int, 2, "networks trained independently (seeds seed, seed+1, ...)", min=1),
        "budget": Key(str, "10m", "training time of each network (s/m/h/d)"),
        "milestones": Key(str, "3m,10m", "named checkpoints, comma separated durations"),
        "workers": Key(int, 1, "population members trained in parallel processes", min=1),
        "threads": Key(int, 1, "TensorFlow threads per worker process", min=1),
        "games_in_flight": Key(int, 0, "self-play games kept going per worker, their expansions "
                                       "evaluated in one batch (0: auto, from the branching factor)",
                               min=0),
        "inference": Key(str, "auto", "network backend inside self-play: onnx (ONNX Runtime), numpy, "
                                      "tf (tf.function); auto: tf on a GPU, else onnx if installed, "
                                      "else numpy", choices=("auto", "onnx", "numpy", "tf")),
        "device": Key(str, "auto", "training and inference device: auto (a GPU when TensorFlow sees "
                                   "one), cpu or gpu", choices=("auto", "cpu", "gpu")),
        "learner": Key(str, "thread", "training steps in a thread beside self-play (thread; "
                                      "self-play's weights at most one pass old) or between games "
                                      "(inline)", choices=("thread", "inline")),
        "ray": Key(str, "", "Ray cluster for train/rank/evaluate/pipeline: '' (no Ray: local worker "
                             "processes), 'local', 'auto' or an address; --ray overrides it"),
    },
}


def default_config_path(game: str) -> Path:
    return CONFIG_DIR / f"{games.parse_spec(game)[0]}.toml"


def load_config(path: str | Path) -> dict[str, dict[str, Any]]:
    """Read and validate a config file; returns every section with defaults filled in."""
    path = Path(path)
    try:
        raw = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise ConfigError(f"{path}: config file not found") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc})") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read ({exc})") from None
    out: dict[str, dict[str, Any]] = {}
    for section, value in raw.items():
        if section not in SCHEMA:
            raise ConfigError(f"{path}: unknown section [{section}] (known: {', '.join(SCHEMA)})")
        if not isinstance(value, dict):
            raise ConfigError(f"{path}: '{section}' must be a table [{section}]")
        for key, v in value.items():
            spec = SCHEMA[section].get(key)
            if spec is None:
                raise ConfigError(f"{path}: unknown key '{section}.{key}' "
                                  f"(known: {', '.join(SCHEMA[section])})")
            if spec.type is float and isinstance(v, int) and not isinstance(v, bool):
                v = float(v)
                value[key] = v
            if (spec.type in (int, float) and isinstance(v, bool)) or not isinstance(v, spec.type):
                raise ConfigError(f"{path}: '{section}.{key}' must be {spec.type.__name__}, got {v!r}")
            if spec.min is not None and v < spec.min:
                raise ConfigError(f"{path}: '{section}.{key}' must be >= {spec.min}, got {v!r}")
            if spec.max is not None and v > spec.max:
                raise ConfigError(f"{path}: '{section}.{key}' must be <= {spec.max}, got {v!r}")
            if spec.choices is not None and v not in spec.choices:
                raise ConfigError(f"{path}: '{section}.{key}' must be one of "
                                  f"{', '.join(map(str, spec.choices))}, got {v!r}")
    for section, keys in SCHEMA.items():
        given = raw.get(section, {})
        out[section] = {k: given.get(k, key.default) for k, key in keys.items()}
    if out["game"]["spec"] is None:
        raise ConfigError(f"{path}: missing key 'game.spec'")
    try:
        games.load(out["game"]["spec"])
    except GameError as exc:
        raise ConfigError(f"{path}: game.spec: {exc}") from None
    for key in ("budget", "milestones"):
        try:
            parse_durations(out["run"][key])
        except ValueError as exc:
            raise ConfigError(f"{path}: 'run.{key}': {exc}") from None
    return out


_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(text: str) -> float:
    """'90s', '20m', '1.5h', '70d' (or a plain number of seconds) -> seconds."""
    t = str(text).strip().lower()
    try:
        if t and t[-1] in _UNITS:
            value = float(t[:-1]) * _UNITS[t[-1]]
        else:
            value = float(t)
    except ValueError:
        raise ValueError(f"bad duration {text!r} (expected a number with s, m, h or d, e.g. 20m)") from None
    if value <= 0:
        raise ValueError(f"duration {text!r} must be positive")
    return value


def parse_durations(text: str) -> list[tuple[str, float]]:
    """'20d,70d' -> [('20d', 1728000.0), ('70d', 6048000.0)], sorted by duration."""
    items = [x.strip() for x in str(text).split(",") if x.strip()]
    if not items:
        raise ValueError(f"no duration in {text!r}")
    out = sorted(((x, parse_duration(x)) for x in items), key=lambda p: p[1])
    return out


def describe_schema() -> str:
    lines = []
    for section, keys in SCHEMA.items():
        lines.append(f"[{section}]")
        for k, key in keys.items():
            lines.append(f"  {k} = {key.default!r}   # {key.help}")
    return "\n".join(lines)


def config_ray(game: str) -> str | None:
    """The [run] ray address of a game's default config, or None."""
    path = default_config_path(game)
    if not path.exists():
        return None
    return load_config(path)["run"]["ray"] or None


def all_configs() -> list[tuple[Path, dict]]:
    """Every config in configs/, validated, sorted by file name."""
    return [(p, load_config(p)) for p in sorted(CONFIG_DIR.glob("*.toml"))]
