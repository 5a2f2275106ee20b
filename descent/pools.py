"""A run's pools (``pools.json``, written by ``descent rank``): the schema every reader checks it
against, and the one reader (``evaluate``, ``calibrate --against pool``; ``report`` shows it)."""
from __future__ import annotations

from pathlib import Path

from games import validate as v
from training import layout

_POOL_NET = v.Record({"net": v.Str(256, empty=False), "path": v.Str(4096, empty=False)})
POOLS = v.Record({"game": v.Str(256, empty=False), "high": v.List(_POOL_NET, 1),
                  "low": v.List(_POOL_NET, 1)})   # what the stages read of pools.json (games.validate)


def read_pools(run_dir, game: str, error, hint: str = "") -> dict:
    """The checked pools of ``game`` in ``run_dir``: ``error`` when the run has none yet (``hint``:
    what else the user may do), when the file is not a pools record, or when it ranks another game."""
    path = layout.pools_file(run_dir)
    if not path.exists():
        raise error(f"{Path(run_dir)}: no pools yet (pools.json missing); run `descent rank {game} "
                    f"--run {Path(run_dir)}` first{hint}")
    pools = v.load_json(path, POOLS, error, f"pools file {path}")
    if pools.get("game") != game:
        raise error(f"{path}: pools of {pools.get('game')}, not of {game}")
    return pools
