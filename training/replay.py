"""The replay buffer: the examples of the last ``window`` games, compact in memory, one HDF5 file
per self-play game on disk.

Memory
------
Every game's encoding (``State.encode_planes``) is 0/1 except the synthetic ``tree_game``, so the
planes of a game are stored bit-packed: one example of planes shape (H, W, C) takes
``ceil(H*W*C / 8)`` bytes of planes plus 4 bytes of target, instead of ``4*H*W*C + 4`` as float32
(a game whose planes are not all 0/1 keeps float32). Training samples a fraction sigma of the window
by index (``sample_indices``), takes the sample's rows still packed (``take``, O(sample) bytes) and
decodes one minibatch at a time (``decode``): the window is never concatenated or decoded.

===========================  ==============  ==============
 game (planes shape)          float32 before  bit-packed now
===========================  ==============  ==============
 tic_tac_toe (3, 3, 2)        76 B            7 B
 reversi(size=6) (6, 6, 2)    292 B           13 B
 reversi (8, 8, 2)            516 B           20 B
 connect6(size=9) (9, 9, 3)   976 B           35 B
 chess (8, 8, 19)             4868 B          156 B
===========================  ==============  ==============

(``bytes_per_example(planes_shape)`` computes the figure for any game.) Before, sampling also
concatenated the whole window every game, a transient second copy of it.

Files
-----
Layout of ``<member>/replay/g<GAME:08d>.h5`` (readable with h5py), format ``descent-replay-2``:

=================  ==========================  ===============================================
 dataset / attr     shape, type                 meaning
=================  ==========================  ===============================================
 ``planes``         (n, ceil(H*W*C/8)) uint8    encoded states (the mover's point of view),
                                                each flattened in (H, W, C) C order and packed
                                                with ``numpy.packbits`` (big bit order)
 ``x``              (n, H, W, C) float32        instead of ``planes`` when the planes are not
                                                all 0/1 (and in ``descent-replay-1`` files)
 ``y``              (n,) float32                backed-up value, the mover's point of view
 ``ply``            (n,) int32                  ply of the state (distance from the game start
                                                for tree states: the root's ply + depth)
 attr ``format``    str                         ``descent-replay-2`` (absent in version 1)
 attr ``planes_shape`` (3,) int                 (H, W, C)
 attr ``game_id``   int                         1-based index of the game in this member's run
 attr ``result``    int                         b_t of the game, first player's point of view
 attr ``plies``     int                         length of the game
 attr ``game``      str                         the game spec (and ``version``)
=================  ==========================  ===============================================

Version-1 files (float32 ``x``, no ``format``) still load; they are packed in memory when binary.

Each file is written under a temporary name and renamed, so a file either exists whole or not at
all. Files of games past the member's saved counter (a kill between the two writes) are discarded
on resume, so nothing is counted twice; the file of a game leaving the window is deleted only after
the state counting its successor is saved (``trim_files``), so a kill never leaves a counted game of
the window without its file. A window whose files are missing (``load`` returns them) is not an
error: training continues from the weights.
"""
from __future__ import annotations

import math
from pathlib import Path

import h5py
import numpy as np

from training import fileio, layout
from training.network import CheckpointError, read_h5

FORMAT = "descent-replay-2"


def bytes_per_example(planes_shape, packed: bool = True) -> int:
    """Memory of one example (planes + float32 target) in the replay window."""
    n = int(np.prod(planes_shape))
    return (math.ceil(n / 8) if packed else 4 * n) + 4


def is_binary(x: np.ndarray) -> bool:
    return bool(np.all((x == 0) | (x == 1)))


def pack_planes(x: np.ndarray) -> np.ndarray:
    """(n, H, W, C) 0/1 planes -> (n, ceil(H*W*C/8)) uint8."""
    return np.packbits(x.reshape(len(x), -1).astype(np.uint8, copy=False), axis=1)


def unpack_planes(p: np.ndarray, shape) -> np.ndarray:
    """Inverse of ``pack_planes``: (n, bytes) uint8 -> (n, H, W, C) float32."""
    n = int(np.prod(shape))
    return np.unpackbits(p, axis=1, count=n).reshape(len(p), *shape).astype(np.float32)


class _Game:
    __slots__ = ("planes", "packed", "y")

    def __init__(self, planes: np.ndarray, packed: bool, y: np.ndarray):
        self.planes, self.packed, self.y = planes, packed, y

    @property
    def nbytes(self) -> int:
        return self.planes.nbytes + self.y.nbytes


class ReplayBuffer:
    """The examples of the last ``window`` games, in memory (bit-packed), backed by one file per game.

    ``max_bytes``: the window's memory cap (the member's ``memory_mb`` share, ``training.memory``):
    past it the oldest games leave the window, whole (the newest game always stays), so every game
    in the window keeps all its tree-learning examples."""

    def __init__(self, directory: Path, window: int, planes_shape, max_bytes: int | None = None):
        self.dir = Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.window = window
        self.max_bytes = max_bytes
        self.shape = tuple(int(v) for v in planes_shape)
        self.games: dict[int, _Game] = {}
        # (ids, starts) of the games in id order, rebuilt on change
        self._offsets: tuple[list[int], np.ndarray] | None = None
        self._stale: list[int] = []     # games out of the window whose files are not yet deleted

    def files(self) -> dict[int, Path]:
        out = {}
        for p in self.dir.iterdir():
            game = layout.replay_game(p.name)
            if game is not None:
                out[game] = p
        return out

    def load(self, games_done: int) -> list[int]:
        """Read the window ending at game ``games_done``; drop files of later games (never counted)
        and of earlier ones (out of the window). Returns the games of the window whose files are
        missing (a run moved without its replay folder, files deleted by hand): training goes on
        from the weights with the games that are there (the counters are not lowered: the weights
        did learn from the missing games), and the window fills up again with new games."""
        self.games.clear()
        self._offsets = None
        self._stale.clear()
        self.dir.mkdir(parents=True, exist_ok=True)
        fileio.clean_temp_files(self.dir)        # writes interrupted by a kill (their writer is dead)
        files = self.files()
        held: float = 0
        full = False
        for gid, path in sorted(files.items(), reverse=True):      # newest first: the byte cap
            if gid > games_done or gid <= games_done - self.window or full:
                path.unlink()               # never counted, out of the window, or past its bytes
                continue
            game = self._read(path)
            if self.max_bytes is not None and self.games and held + game.nbytes > self.max_bytes:
                path.unlink()
                full = True                 # older games are out too: the window stays contiguous
                continue
            self.games[gid] = game
            held += game.nbytes
        # with a byte cap, games older than the oldest one kept may have left by the cap (their
        # files went then): missing are those newer than it, and the older ones the window would
        # still have room for (at the kept games' mean size)
        lo = max(1, games_done - self.window + 1)
        first = min(self.games, default=games_done + 1) if self.max_bytes is not None else 0
        missing = [g for g in range(lo, games_done + 1)
                   if g not in self.games and (g > first or not self.games)]
        if self.max_bytes is not None and self.games:
            mean, room = held / len(self.games), self.max_bytes - held
            for g in range(first - 1, lo - 1, -1):
                if room < mean:
                    break
                missing.append(g)
                room -= mean
        return sorted(missing)

    def _read(self, path: Path) -> _Game:
        with read_h5(path, "replay file") as f:
            y = f["y"][()]
            if "planes" in f:
                fmt = f.attrs.get("format")
                shape = tuple(int(v) for v in f.attrs.get("planes_shape", ()))
                if fmt != FORMAT:
                    raise CheckpointError(f"{path}: replay file of format {fmt!r}, this version "
                                          f"reads {FORMAT!r} and version 1")
                if shape != self.shape:
                    raise CheckpointError(f"{path}: replay file holds planes {shape}, "
                                          f"expected {self.shape}")
                planes = f["planes"][()]
                if planes.dtype != np.uint8 or planes.ndim != 2 or \
                        planes.shape[1] != math.ceil(int(np.prod(self.shape)) / 8):
                    raise CheckpointError(f"{path}: packed planes of shape {planes.shape} "
                                          f"{planes.dtype} do not fit planes {self.shape}")
                game = _Game(planes, True, y)
            else:
                x = f["x"][()]
                if x.shape[1:] != self.shape:
                    raise CheckpointError(f"{path}: replay file holds planes {x.shape[1:]}, "
                                          f"expected {self.shape}")
                game = self._compact(x, y)
        if not isinstance(y, np.ndarray) or y.dtype.kind != "f" or not np.isfinite(y).all():
            raise CheckpointError(f"{path}: replay file does not hold finite targets y (N,)")
        if not game.packed and not np.isfinite(game.planes).all():
            raise CheckpointError(f"{path}: replay file holds non-finite planes")
        if len(game.planes) != len(y) or y.ndim != 1:
            raise CheckpointError(f"{path}: replay file holds {len(game.planes)} states and "
                                  f"{len(y)} targets")
        return game

    @staticmethod
    def _compact(x: np.ndarray, y: np.ndarray) -> _Game:
        y = np.ascontiguousarray(y, dtype=np.float32)
        if is_binary(x):
            return _Game(pack_planes(x), True, y)
        return _Game(np.ascontiguousarray(x, dtype=np.float32), False, y)

    def add(self, game_id: int, x: np.ndarray, y: np.ndarray, ply: np.ndarray, attrs: dict) -> None:
        path = layout.replay_file(self.dir, game_id)
        game = self._compact(x, y)
        with fileio.atomic_target(path) as tmp, h5py.File(tmp, "w") as f:
            f.attrs["format"] = FORMAT
            f.attrs["planes_shape"] = np.asarray(self.shape, np.int64)
            if game.packed:
                f.create_dataset("planes", data=game.planes, compression="lzf",
                                 chunks=True if len(x) else None)
            else:
                f.create_dataset("x", data=game.planes, compression="lzf",
                                 chunks=True if len(x) else None)
            f.create_dataset("y", data=game.y)
            f.create_dataset("ply", data=ply)
            f.attrs["game_id"] = game_id
            for k, v in attrs.items():
                f.attrs[k] = v
        self.games[game_id] = game
        self._offsets = None
        old = [g for g in self.games if g <= game_id - self.window]
        if self.max_bytes is not None:      # the oldest games past the byte cap, the newest kept
            held = sum(g.nbytes for g in self.games.values())
            for gid in sorted(self.games):
                if held <= self.max_bytes or gid == game_id:
                    break
                if gid not in old:
                    old.append(gid)
                held -= self.games[gid].nbytes
        for gid in old:
            del self.games[gid]         # out of the window in memory now; its file goes later
            self._stale.append(gid)

    def trim_files(self) -> None:
        """Delete the files of the games that left the window. Called once the state that counts
        the game which pushed them out is saved: deleting them before (in ``add``) let a kill
        between the two writes leave a window one game short (the counter still said N, the file
        of game N+1 was discarded on resume, and that of game N+1-window was already gone)."""
        for old in self._stale:
            layout.replay_file(self.dir, old).unlink(missing_ok=True)
        self._stale.clear()

    @property
    def size(self) -> int:
        return sum(len(g.y) for g in self.games.values())

    @property
    def nbytes(self) -> int:
        """Memory held by the window's examples."""
        return sum(g.nbytes for g in self.games.values())

    def _index(self):
        if self._offsets is None:
            ids = sorted(self.games)
            sizes = np.array([len(self.games[g].y) for g in ids], dtype=np.int64)
            starts = np.zeros(len(ids) + 1, dtype=np.int64)
            np.cumsum(sizes, out=starts[1:])
            self._offsets = (ids, starts)
        return self._offsets

    def sample_size(self, fraction: float, min_size: int) -> int:
        n = self.size
        return min(n, max(min_size, int(round(fraction * n))))

    def sample_indices(self, fraction: float, min_size: int, rng: np.random.Generator) -> np.ndarray:
        """Indices (in random order) of a uniform sample without replacement of ``fraction`` of the
        window, at least ``min_size`` examples (or all). Memory O(sample), not O(window): draw
        indices with replacement until enough distinct ones, then keep a random ``k`` of them (the
        distinct set of exchangeable draws is a uniform subset, so the result is uniform)."""
        n = self.size
        k = self.sample_size(fraction, min_size)
        if k == 0:
            return np.zeros(0, dtype=np.int64)
        if 3 * k >= n:                          # a large fraction: a permutation is as cheap
            return rng.permutation(n)[:k]
        got = np.unique(rng.integers(0, n, size=k + k // 8 + 16))
        while len(got) < k:
            got = np.unique(np.concatenate([got, rng.integers(0, n, size=k - len(got) + 16)]))
        return rng.choice(got, size=k, replace=False)

    def take(self, idx: np.ndarray):
        """The examples at the given window indices, still compact: ``(rows, y, packed)`` with
        ``rows`` bit-packed uint8 (n, bytes) when every game of the window is packed (decode a slice
        with ``decode``), else float32 planes. One sort and one take per game of the window."""
        ids, starts = self._index()
        idx = np.asarray(idx, dtype=np.int64)
        if len(idx) and (idx.min() < 0 or idx.max() >= starts[-1]):
            raise IndexError(f"replay index out of range 0..{starts[-1] - 1}")
        packed = all(self.games[g].packed for g in ids)
        order = np.argsort(idx, kind="stable")
        sidx = idx[order]
        bounds = np.searchsorted(sidx, starts)
        planes, ys = [], []
        for j, gid in enumerate(ids):
            lo, hi = bounds[j], bounds[j + 1]
            if hi > lo:
                game = self.games[gid]
                rows = sidx[lo:hi] - starts[j]
                p = game.planes[rows]
                planes.append(p if packed or not game.packed else unpack_planes(p, self.shape))
                ys.append(game.y[rows])
        width = (math.ceil(int(np.prod(self.shape)) / 8),) if packed else self.shape
        rows_sorted = np.concatenate(planes) if planes else np.zeros((0, *width), np.uint8 if packed
                                                                       else np.float32)
        y_sorted = np.concatenate(ys) if ys else np.zeros(0, np.float32)
        rows = np.empty_like(rows_sorted)
        y = np.empty_like(y_sorted)
        rows[order] = rows_sorted
        y[order] = y_sorted
        return rows, y, packed

    def decode(self, rows: np.ndarray, packed: bool) -> np.ndarray:
        return unpack_planes(rows, self.shape) if packed else rows

    def gather(self, idx: np.ndarray):
        """The examples at the given window indices, decoded: (x float32 (k, H, W, C), y (k,))."""
        rows, y, packed = self.take(idx)
        return self.decode(rows, packed), y

    def sample(self, fraction: float, min_size: int, rng: np.random.Generator):
        """A uniform sample (without replacement) of ``fraction`` of the memory, at least
        ``min_size`` examples (or all), decoded at once (``sample_indices`` + ``gather`` by batch
        keeps memory down)."""
        if not self.games:
            return None, None
        return self.gather(self.sample_indices(fraction, min_size, rng))
