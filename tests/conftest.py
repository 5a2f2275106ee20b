import os
import sys
from pathlib import Path

import pytest
from hypothesis import settings

# the repository root on the path: tests import the experiments' code in examples/ (not a package
# of the library), whatever directory pytest is started from
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import games  # noqa: E402

# Property tests draw the same examples on every run (a seed derived from each test's name), so a
# test that passes in one clone passes in every clone; no example database is read or written.
# ``HYPOTHESIS_PROFILE=explore`` draws fresh examples, for a person hunting for new failures.
settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

# The automatic choices that count cores (a lone member's self-play actors, training.actors) see
# two cores in every test, whatever the machine: a test runs the same on a laptop and a 64-core
# server (a test that wants actors asks for them). Subprocesses inherit it.
os.environ.setdefault("DESCENT_CPUS", "2")

# Every registered game at its default parameters, plus the other sizes users are told about.
GAME_SPECS = [
    "tic_tac_toe",
    "reversi", "reversi(size=6)", "reversi(size=10)",
    "breakthrough", "breakthrough(rows=6,cols=6)", "breakthrough(rows=6,cols=5)",
    "outer_open_gomoku", "outer_open_gomoku(size=7)",
    "connect6", "connect6(size=9)",
    "chess", "xiangqi", "international_draughts", "international_draughts(board=8)",
    "lines_of_action", "lines_of_action(board=6)", "havannah", "havannah(base=4)",
    "havannah(base=5,swap=false)",
    "tapatan", "tapatan(start=preset)", "alquerque", "alquerque(rules=ludii)", "tsoro_yematatu",
    "five_field_kono",
]


def pytest_collection_modifyitems(config, items):
    # A registered game without conformance coverage is a test failure, not a silent gap.
    names = {games.parse_spec(s)[0] for s in GAME_SPECS}
    missing = set(games.names()) - names
    if missing:
        raise pytest.UsageError(f"tests/conftest.py GAME_SPECS lacks registered games: {sorted(missing)}")


@pytest.fixture(scope="module")
def serve_data_dir(tmp_path_factory):
    """For the page's tests: the games file (descent.web.store) and the profiles in a folder of
    the test module's own (``DESCENT_DATA_DIR``)."""
    path = tmp_path_factory.mktemp("data")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DESCENT_DATA_DIR", str(path))
        yield path
