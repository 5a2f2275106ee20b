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


SCHEMA: dict[str, dict[str, Key]] = {
    "game": {
        "spec": Key(str, None, "the game and its parameters, e.g. 'reversi(size=6)'"),
    },
    "tour": {
        "perft_depth": Key(int, 3, "perft depth run by `descent tour`", min=1),
        "random_games": Key(int, 1000, "random games played by `descent tour`", min=1),
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
            if spec.type is int and isinstance(v, bool) or not isinstance(v, spec.type):
                raise ConfigError(f"{path}: '{section}.{key}' must be {spec.type.__name__}, got {v!r}")
            if spec.min is not None and v < spec.min:
                raise ConfigError(f"{path}: '{section}.{key}' must be >= {spec.min}, got {v!r}")
    for section, keys in SCHEMA.items():
        given = raw.get(section, {})
        out[section] = {k: given.get(k, key.default) for k, key in keys.items()}
    if out["game"]["spec"] is None:
        raise ConfigError(f"{path}: missing key 'game.spec'")
    try:
        games.load(out["game"]["spec"])
    except GameError as exc:
        raise ConfigError(f"{path}: game.spec: {exc}") from None
    return out


def all_configs() -> list[tuple[Path, dict]]:
    """Every config in configs/, validated, sorted by file name."""
    return [(p, load_config(p)) for p in sorted(CONFIG_DIR.glob("*.toml"))]
