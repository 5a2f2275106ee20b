"""run.json says which code started a run (package version, git commit of a checkout) and which
config (its sha256), and which other code continued it."""
import json
import shutil
import subprocess
from pathlib import Path

from training.run import check_run, code_provenance, config_digest

ROOT = Path(__file__).resolve().parent.parent
CONFIG = {"network": {"blocks": 1}, "selfplay": {"iterations": 5}, "training": {"batch_size": 8}}


def test_run_json_records_the_code_and_the_config_hash(tmp_path):
    check_run(tmp_path, "tic_tac_toe", CONFIG, 3)
    rec = json.loads((tmp_path / "run.json").read_text())
    assert rec["config_sha256"] == config_digest(CONFIG) and len(rec["config_sha256"]) == 64
    assert config_digest(dict(reversed(list(CONFIG.items())))) == rec["config_sha256"]   # key order
    assert config_digest({**CONFIG, "training": {"batch_size": 9}}) != rec["config_sha256"]
    assert rec["code"] == code_provenance()
    assert rec["code"]["version"] == "0.1.0" or rec["code"]["version"] is None
    if (ROOT / ".git").exists() and shutil.which("git"):
        head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
        assert rec["code"]["commit"] == head and isinstance(rec["code"]["dirty"], bool)


def test_a_rerun_by_other_code_is_recorded_once(tmp_path):
    check_run(tmp_path, "tic_tac_toe", CONFIG, 3)
    path = tmp_path / "run.json"
    first = path.read_text()
    check_run(tmp_path, "tic_tac_toe", CONFIG, 3)          # same code: run.json untouched
    assert path.read_text() == first
    rec = json.loads(first)
    rec["code"] = {"version": "0.0.9", "commit": "0" * 40, "dirty": False}    # started by older code
    path.write_text(json.dumps(rec))
    check_run(tmp_path, "tic_tac_toe", CONFIG, 3)
    check_run(tmp_path, "tic_tac_toe", CONFIG, 3)
    rec = json.loads(path.read_text())
    assert rec["code"]["version"] == "0.0.9"
    assert rec["continued_with"] == [code_provenance()]
