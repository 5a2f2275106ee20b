"""Same games for the same seeds and budgets: fixed-seed self-play games of the pool
(``search_ext.selfplay.SelfPlayPool``) and fixed-seed games between best-first searches
(``search_ext.bestfirst.BestFirstSearch``: minimax, Descent, Minibal_n, Minibal_+, proven wins, a
small table that fills), replayed through the Descent core and compared with the records taken
before the two implementations became one (``tests/data/core_records.json``, written by
``tests/data/make_core_records.py``): moves, results, examples (counts and digests), root values,
analyses, table sizes. Iteration budgets only."""
import importlib.util
import json
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parent / "data"


def _maker():
    spec = importlib.util.spec_from_file_location("make_core_records", DATA / "make_core_records.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


MAKER = _maker()
RECORDS = json.loads((DATA / "core_records.json").read_text())


def test_the_records_cover_every_case():
    pool = {f"{g}/{c[0]}" for g in MAKER.POOL_GAMES for c in MAKER.POOL_CASES}
    search = {f"{g}/{c[0]}" for g in MAKER.SEARCH_GAMES for c in MAKER.SEARCH_CASES}
    assert set(RECORDS["selfplay_pool"]) == pool and set(RECORDS["best_first"]) == search
    assert all(len(v) == 4 for v in RECORDS["selfplay_pool"].values())


@pytest.fixture(scope="module")
def replayed():
    return MAKER.records()


@pytest.mark.parametrize("part", ["selfplay_pool", "best_first"])
def test_same_games_as_the_records(replayed, part):
    old = RECORDS[part]
    bad = sorted(k for k in old if replayed[part].get(k) != old[k])
    assert not bad, f"{len(bad)} records differ: {', '.join(bad)}"
    assert set(replayed[part]) == set(old)
