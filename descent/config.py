"""Per-game configuration files (``configs/<game>.toml``), read with ``tomllib`` and validated.

Every key is declared in ``SCHEMA`` with its type, default and meaning; an unknown section or key, a
value of the wrong type or a game spec that does not load is a ``ConfigError`` naming the file and
the key. Later stages (training, ranking, evaluation) add their sections here. The runtime keys of
``[run]`` (games in flight, inference backend, device, learner) are not written here: they come from
their one definition, ``training.options.RuntimeOptions`` (``option_keys``), as do their
command-line options and the table of ``docs/options.md`` (``python -m descent.options_doc``).
"""
from __future__ import annotations

import tomllib
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import games
from games import validate
from games.errors import GameError
from training.architecture import HELP as ARCH_HELP, Architecture, field_checks
from training.options import RuntimeOptions, option_fields

from descent.resources import CONFIG_DIR


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


def option_keys(options_class) -> dict[str, Key]:
    """The config keys of an options dataclass (``training.options``): one per field, with its
    type, default, help, range and choices."""
    return {f.name: Key(f.type, f.default, f.help, min=f.info.min, choices=f.info.choices,
                        max=f.info.max) for f in option_fields(options_class)}


def network_keys() -> dict[str, Key]:
    """The ``[network]`` keys: one per field of ``training.architecture.Architecture`` (its type and
    default), with the range or choices of its check in ``META`` and its ``HELP`` text."""
    checks = field_checks()
    out = {}
    for f in fields(Architecture):
        check = checks[f.name]
        typ = type(f.default)
        out[f.name] = Key(typ, f.default, ARCH_HELP[f.name], min=getattr(check, "lo", None),
                          max=getattr(check, "hi", None), choices=getattr(check, "choices", None))
    return out


def build_schema(runtime=RuntimeOptions) -> dict[str, dict[str, Key]]:
    """Every section's keys; ``[run]`` takes its runtime keys from ``runtime``."""
    return {
        "game": {
            "spec": Key(str, None, "the game and its parameters, e.g. 'reversi(size=6)'"),
        },
        "tour": {
            "perft_depth": Key(int, 3, "perft depth run by `descent tour`", min=1, max=64),
            "random_games": Key(int, 1000, "random games played by `descent tour`", min=1,
                                max=validate.MAX_COUNT),
        },
        "network": network_keys(),
        "selfplay": {
            "iterations": Key(int, 50, "Descent iterations per move (used when time = 0)", min=1,
                              max=validate.MAX_COUNT),
            "time": Key(float, 0.0, "seconds of search per move (0: use iterations)", min=0.0,
                        max=validate.MAX_SECONDS),
            "exploration": Key(str, "ordinal", "move choice in self-play", choices=("ordinal", "epsilon")),
            "epsilon": Key(float, 0.1, "probability of a random move (exploration = epsilon)", min=0.0,
                           max=1.0),
            "exploration_floor": Key(float, 0.05, "minimum of e = t / T in the ordinal distribution",
                                     min=0.0, max=1.0),
            "exploration_ceiling": Key(float, 1.0, "maximum of e = t / T in the ordinal distribution "
                                       "(1: greedy by the end of the budget; below 1 keeps late games "
                                       "apart)", min=0.0, max=1.0),
            "max_nodes": Key(int, 2_000_000, "memory cap of one game's search tree (states)", min=16,
                             max=2 ** 31 - 1),
            "max_mb": Key(float, 1024.0, "memory cap of one game's search table in megabytes (about 80 "
                          "bytes a state; the smaller of the two caps applies)", min=1.0, max=1e6),
        },
        "training": {
            "replay_games": Key(int, 100, "replay window mu: examples of the last mu games", min=1,
                                max=10 ** 6),
            "sample_fraction": Key(float, 0.04, "sigma: fraction of the memory sampled per update",
                                   min=0.0, max=1.0),
            "min_sample": Key(int, 128, "at least this many examples per update", min=1, max=10 ** 9),
            "batch_size": Key(int, 128, "minibatch size", min=1, max=10 ** 6),
            "learning_rate": Key(float, 1e-3, "Adam learning rate", min=0.0, max=10.0),
            "augment": Key(bool, True, "augment with the game's exact symmetries"),
        },
        "run": {
            "population": Key(int, 2, "networks trained independently (seeds seed, seed+1, ...)", min=1,
                              max=10_000),
            "budget": Key(str, "10m", "training time of each network (s/m/h/d)"),
            "milestones": Key(str, "3m,10m", "named checkpoints, comma separated durations"),
            "min_games": Key(int, 0, "the budget's floor: self-play games each network finishes before "
                                     "its budget counts as spent, each milestone waiting for its share "
                                     "(so a slow or busy machine still trains on that many)",
                             min=0, max=10 ** 9),
            "workers": Key(int, 1, "population members trained in parallel processes", min=1, max=1024),
            "threads": Key(int, 1, "TensorFlow threads per worker process", min=1, max=1024),
            **option_keys(runtime),
            "ray": Key(str, "", "Ray cluster for train/rank/evaluate/calibrate/pipeline: '' (no Ray: local worker "
                                 "processes), 'local', 'auto' or an address; --ray overrides it"),
        },
    }


SCHEMA: dict[str, dict[str, Key]] = build_schema()


def default_config_path(game: str) -> Path:
    return CONFIG_DIR / f"{games.parse_spec(game)[0]}.toml"


def default_config(spec: str) -> dict[str, dict[str, Any]]:
    """Every section at the schema's defaults, for the game ``spec``: the config of a game written
    in Python (``games.plugins``) that has no ``configs/<game>.toml``."""
    out = {section: {k: key.default for k, key in keys.items()} for section, keys in SCHEMA.items()}
    out["game"]["spec"] = games.load(spec).spec
    return out


def read_toml(path: str | Path, what: str, error=None) -> tuple[Path, dict]:
    """(the checked path, the parsed table) of a TOML file: the one TOML reader of the project
    (config files here, experiment files in ``descent.experiment``). Any failure is ``error``
    (default ``ConfigError``) in one line naming the file: ``<path>: <what> not found``, not valid
    TOML, cannot read."""
    error = error or ConfigError
    path = validate.file_path(path, what, error)
    try:
        return path, tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise error(f"{path}: {what} not found") from None
    except tomllib.TOMLDecodeError as exc:
        raise error(validate.one_line(f"{path}: not valid TOML ({exc})")) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise error(validate.one_line(f"{path}: cannot read ({exc})")) from None


def load_config(path: str | Path) -> dict[str, dict[str, Any]]:
    """Read and validate a config file; returns every section with defaults filled in."""
    path, raw = read_toml(path, "config file")
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
            what = f"{path}: '{section}.{key}'"
            if spec.type is int:
                validate.integer(v, what, spec.min, spec.max, ConfigError)
            elif spec.type is float:        # NaN and infinity fail here (nan < min is false)
                validate.real(v, what, spec.min, spec.max, ConfigError)
            else:
                validate.text(v, what, ConfigError, ascii=False, empty=True)
            if spec.choices is not None and v not in spec.choices:
                raise ConfigError(f"{path}: '{section}.{key}' must be one of "
                                  f"{', '.join(map(str, spec.choices))}, got {v!r}")
    for section, keys in SCHEMA.items():
        given = raw.get(section, {})
        out[section] = {k: given.get(k, key.default) for k, key in keys.items()}
    if out["game"]["spec"] is None:
        raise ConfigError(f"{path}: missing key 'game.spec'")
    if out["run"]["ray"]:
        validate.text(out["run"]["ray"], f"{path}: 'run.ray'", ConfigError, max_len=256)
    try:
        games.load(out["game"]["spec"])
    except GameError as exc:
        raise ConfigError(f"{path}: game.spec: {exc}") from None
    if out["selfplay"]["exploration_ceiling"] < out["selfplay"]["exploration_floor"]:
        raise ConfigError(f"{path}: 'selfplay.exploration_ceiling' ({out['selfplay']['exploration_ceiling']}) "
                          f"is below 'selfplay.exploration_floor' ({out['selfplay']['exploration_floor']})")
    for key in ("budget", "milestones"):
        try:
            (parse_duration if key == "budget" else parse_durations)(out["run"][key])
        except ValueError as exc:
            raise ConfigError(validate.one_line(f"{path}: 'run.{key}': {exc}")) from None
    return out


def check_config_game(cfg: dict, path, spec: str) -> list[str]:
    """Refuse a config written for another game (``ConfigError``); return warnings when it is for
    the same game with other parameters."""
    cfg_spec = games.load(cfg["game"]["spec"]).spec
    if games.parse_spec(cfg_spec)[0] != games.parse_spec(spec)[0]:
        raise ConfigError(f"{path}: a config for {cfg_spec}, not for {spec} (give --config of "
                          f"this game or leave it out)")
    if cfg_spec != spec:
        return [f"warning: {path} is a config for {cfg_spec}; using it for {spec}"]
    return []


_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


MAX_DURATION = 3650 * 86400.0      # ten years of training: more is a typo


def parse_duration(text: str) -> float:
    """'90s', '20m', '1.5h', '70d' (or a plain number of seconds) -> seconds: ASCII, finite,
    positive, at most ten years (``ConfigError``, a ``ValueError``)."""
    t = validate.text(text, "duration", ConfigError, max_len=64).strip().lower()
    number, unit = (t[:-1], t[-1]) if t[-1] in _UNITS else (t, "s")
    if validate.REAL_TEXT.fullmatch(number.strip()) is None:
        raise ConfigError(f"bad duration {text!r} (expected a number with s, m, h or d, e.g. 20m)")
    value = validate.parse_real(number, f"duration {text!r}", error=ConfigError) * _UNITS[unit]
    return validate.real(value, f"duration {text!r}", 0.0, MAX_DURATION, ConfigError, lo_open=True)


def parse_durations(text: str) -> list[tuple[str, float]]:
    """'20d,70d' -> [('20d', 1728000.0), ('70d', 6048000.0)], sorted by duration; empty items and
    two milestones of the same name or duration are refused."""
    items = validate.split_list(text, "milestones", ConfigError, max_items=64)
    out = sorted(((x, parse_duration(x)) for x in items), key=lambda p: p[1])
    for (a, da), (b, db) in zip(out, out[1:]):
        if a == b or da == db:
            raise ConfigError(f"milestones {text!r}: {a} and {b} are the same milestone")
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

