"""The replay buffer on disk: one HDF5 file per self-play game, the last ``window`` games kept.

Layout of ``<member>/replay/g<GAME:08d>.h5`` (readable with h5py):

=================  ==========================  ===============================================
 dataset / attr     shape, type                 meaning
=================  ==========================  ===============================================
 ``x``              (n, H, W, C) float32        encoded states (the mover's point of view)
 ``y``              (n,) float32                backed-up value, the mover's point of view
 ``ply``            (n,) int32                  ply of the state (distance from the game start
                                                for tree states: the root's ply + depth)
 attr ``game_id``   int                         1-based index of the game in this member's run
 attr ``result``    int                         b_t of the game, first player's point of view
 attr ``plies``     int                         length of the game
 attr ``game``      str                         the game spec (and ``version``)
=================  ==========================  ===============================================

Each file is written under a temporary name and renamed, so a file either exists whole or not at
all. Files of games past the member's saved counter (a kill between the two writes) are discarded
on resume, so nothing is counted twice.
"""
from __future__ import annotations

import re
from pathlib import Path

import h5py
import numpy as np

from training.network import CheckpointError, _fsync_replace, atomic_path

_NAME = re.compile(r"^g(\d{8})\.h5$")


class ReplayBuffer:
    """The examples of the last ``window`` games, in memory, backed by one file per game."""

    def __init__(self, directory: Path, window: int, planes_shape):
        self.dir = Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.window = window
        self.shape = tuple(planes_shape)
        self.games: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def files(self) -> dict[int, Path]:
        out = {}
        for p in self.dir.iterdir():
            m = _NAME.match(p.name)
            if m:
                out[int(m.group(1))] = p
            elif p.name.startswith(".g") and ".tmp" in p.name:
                p.unlink(missing_ok=True)        # a write interrupted by a kill
        return out

    def load(self, games_done: int) -> None:
        """Read the window ending at game ``games_done``; drop files of later games."""
        self.games.clear()
        for gid, path in sorted(self.files().items()):
            if gid > games_done:
                path.unlink()
                continue
            if gid <= games_done - self.window:
                path.unlink()
                continue
            self.games[gid] = self._read(path)

    def _read(self, path: Path):
        from training.network import _H5_ERRORS
        try:
            with h5py.File(path, "r") as f:
                x = f["x"][()]
                y = f["y"][()]
        except _H5_ERRORS as exc:
            raise CheckpointError(" ".join(f"{path}: corrupt or truncated replay file ({exc})".split())) from None
        if (not isinstance(x, np.ndarray) or not isinstance(y, np.ndarray) or x.ndim != 4
                or y.ndim != 1 or x.dtype.kind != "f" or y.dtype.kind != "f"
                or not (np.isfinite(x).all() and np.isfinite(y).all())):
            raise CheckpointError(f"{path}: replay file does not hold finite example arrays x (N, H, W, C) "
                                  f"and y (N,)")
        if x.shape[1:] != self.shape or len(x) != len(y):
            raise CheckpointError(f"{path}: replay file holds planes {x.shape[1:]}, expected {self.shape}")
        return x, y

    def add(self, game_id: int, x: np.ndarray, y: np.ndarray, ply: np.ndarray, attrs: dict) -> None:
        path = self.dir / f"g{game_id:08d}.h5"
        tmp = atomic_path(path)
        with h5py.File(tmp, "w") as f:
            f.create_dataset("x", data=x, compression="lzf", chunks=True if len(x) else None)
            f.create_dataset("y", data=y)
            f.create_dataset("ply", data=ply)
            f.attrs["game_id"] = game_id
            for k, v in attrs.items():
                f.attrs[k] = v
        _fsync_replace(tmp, path)
        self.games[game_id] = (x, y)
        for old in [g for g in self.games if g <= game_id - self.window]:
            del self.games[old]
            (self.dir / f"g{old:08d}.h5").unlink(missing_ok=True)

    @property
    def size(self) -> int:
        return sum(len(y) for _, y in self.games.values())

    def sample(self, fraction: float, min_size: int, rng: np.random.Generator):
        """A uniform sample (without replacement) of ``fraction`` of the memory, at least
        ``min_size`` examples (or all)."""
        if not self.games:
            return None, None
        x = np.concatenate([g[0] for g in self.games.values()])
        y = np.concatenate([g[1] for g in self.games.values()])
        k = min(len(y), max(min_size, int(round(fraction * len(y)))))
        idx = rng.choice(len(y), size=k, replace=False)
        return x[idx], y[idx]
