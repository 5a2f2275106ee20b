"""Build of descent's compiled extensions (game engines in games/, search in search_ext/).

Environment switches:
  DESCENT_DEBUG=1        compile with bounds checks and wraparound on (for a debug test run)
  DESCENT_EXT=a.b,c.d    build only these extension modules (for fast iteration on one engine)
"""
import os
from pathlib import Path

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup

ROOT = Path(__file__).parent
DEBUG = os.environ.get("DESCENT_DEBUG", "") not in ("", "0")
ONLY = {m for m in os.environ.get("DESCENT_EXT", "").split(",") if m}

directives = {
    "language_level": 3,
    "boundscheck": DEBUG,
    "wraparound": DEBUG,
    "initializedcheck": DEBUG,
    "cdivision": True,
    "embedsignature": True,
}


def extensions():
    exts = []
    for pkg in ("games", "search_ext", "training"):
        for pyx in sorted((ROOT / pkg).glob("*.pyx")):
            name = f"{pkg}.{pyx.stem}"
            if ONLY and name not in ONLY:
                continue
            exts.append(Extension(
                name, [str(pyx.relative_to(ROOT))],
                include_dirs=[np.get_include()],
                define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
                extra_compile_args=["-O3"] if not DEBUG else ["-O0", "-g"],
            ))
    return exts


setup(
    ext_modules=cythonize(extensions(), compiler_directives=directives,
                          include_path=[str(ROOT)], nthreads=int(os.environ.get("DESCENT_BUILD_JOBS", "0"))),
)
