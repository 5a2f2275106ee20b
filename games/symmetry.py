"""The dihedral symmetries of a board, used for data augmentation and conformance tests.

A symmetry id maps board coordinates (row, col) on an H x W board (row 0 at the top of the encoding):

====  ================  =========================
 id   name              (r, c) goes to
====  ================  =========================
 0    identity          (r, c)
 1    rotate 90 (ccw)   (W-1-c, r)        square only
 2    rotate 180        (H-1-r, W-1-c)
 3    rotate 270        (c, H-1-r)        square only
 4    mirror columns    (r, W-1-c)
 5    mirror rows       (H-1-r, c)
 6    transpose         (c, r)            square only
 7    anti-transpose    (W-1-c, H-1-r)    square only
====  ================  =========================

``transform_planes`` applies the same map to (..., H, W, C) arrays, so that the encoding of a
symmetric image of a position equals the transformed encoding of the position.
"""
from __future__ import annotations

import numpy as np

from games import validate
from games.errors import GameError

NAMES = ("identity", "rot90", "rot180", "rot270", "mirror_cols", "mirror_rows", "transpose",
         "anti_transpose")


def map_square(sym: int, r: int, c: int, h: int, w: int) -> tuple[int, int]:
    """Image of the square (r, c) under symmetry ``sym``."""
    if not (type(sym) is int and type(r) is int and type(c) is int and type(h) is int
            and type(w) is int):
        _check_ints(sym=sym, r=r, c=c, h=h, w=w)
    if sym == 0:
        return r, c
    if sym == 1:
        return w - 1 - c, r
    if sym == 2:
        return h - 1 - r, w - 1 - c
    if sym == 3:
        return c, h - 1 - r
    if sym == 4:
        return r, w - 1 - c
    if sym == 5:
        return h - 1 - r, c
    if sym == 6:
        return c, r
    if sym != 7:
        validate.integer(sym, "symmetry id", 0, 7)      # raises: every symmetry id returned above
    return w - 1 - c, h - 1 - r


def transform_planes(x: np.ndarray, sym: int) -> np.ndarray:
    """Apply symmetry ``sym`` to the board axes of ``x`` shaped (..., H, W, C)."""
    if not isinstance(x, np.ndarray) or x.ndim < 3:
        raise GameError(f"transform_planes: x must be an array shaped (..., H, W, C), got {type(x).__name__}"
                        + (f" of shape {x.shape}" if isinstance(x, np.ndarray) else ""))
    sym = validate.integer(sym, "symmetry id", 0, 7)
    ax = (x.ndim - 3, x.ndim - 2)
    if sym == 0:
        return x
    if sym == 1:
        return np.rot90(x, 1, axes=ax)
    if sym == 2:
        return np.rot90(x, 2, axes=ax)
    if sym == 3:
        return np.rot90(x, 3, axes=ax)
    if sym == 4:
        return np.flip(x, axis=ax[1])
    if sym == 5:
        return np.flip(x, axis=ax[0])
    if sym == 6:
        return np.swapaxes(x, *ax)
    return np.rot90(np.swapaxes(x, *ax), 2, axes=ax)      # sym == 7


def _check_ints(**values) -> None:
    """``GameError`` naming the first argument that is not an integer (numpy integers pass)."""
    for name, v in values.items():
        validate.integer(v, f"map_square: {name}", -(2 ** 31), 2 ** 31 - 1)
