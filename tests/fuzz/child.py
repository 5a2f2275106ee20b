"""Child process of the generated-input harness (``tests/fuzz/runner.py``): runs cases, one JSON
line per case on stdout, so that a crash or a hang costs the parent one case, not the batch.

Usage: ``python child.py CASES.json FIRST_INDEX`` with the tree under test first on PYTHONPATH.
For every case it prints ``{"start": i}`` then ``{"i": i, "outcome": ..., "detail": ...}``:

* ``accepted``: the call returned (for a CLI case: exit status 0);
* ``refused``: a documented library error (``games.errors.GameError`` and its subclasses) with a
  one-line message, or for a CLI case exit status 2, an ``Error:`` line and no traceback;
* ``traceback``: any other exception (or a CLI exit with a traceback / another status);
* ``multiline``: a refusal whose message spans several lines;
* ``invariant``: an accepted input that broke something checkable (a position that does not read
  back, a database modified by a read-only command, ``x in legal_moves`` that is not a bool).

Values that JSON cannot carry are tagged: ``{"$float": "nan"}``, ``{"$int": "10**30"}``,
``{"$none": true}``, ``{"$bool": true}``.
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
import traceback
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")


def decode(v):
    if isinstance(v, dict):
        if "$float" in v:
            return float(v["$float"])
        if "$int" in v:
            base, _, exp = v["$int"].partition("**")
            return int(base) ** int(exp) if exp else int(base)
        if "$none" in v:
            return None
        if "$bool" in v:
            return bool(v["$bool"])
        return {k: decode(x) for k, x in v.items()}
    if isinstance(v, list):
        return [decode(x) for x in v]
    return v


class Invariant(Exception):
    pass


# ---- executors -----------------------------------------------------------------------------------

def ex_spec(args):
    import games
    games.load(decode(args["text"]))


def ex_position(args):
    import games
    s = games.new_state(args["game"])
    s.set_position(decode(args["text"]))
    text = s.position()
    t = games.new_state(args["game"])
    t.set_position(text)
    if t.position() != text:
        raise Invariant(f"position {text!r} does not read back")
    t.legal_actions_list()


def ex_state_api(args):
    import games
    s = games.new_state(args["game"])
    if args.get("position"):
        s.set_position(args["position"])
    x = decode(args["value"])
    op = args["op"]
    if op == "push":
        s.push(x)
    elif op == "parse_move":
        s.parse_move(x)
    elif op == "move_to_str":
        s.move_to_str(x)
    elif op == "contains":
        r = x in s.legal_moves
        if not isinstance(r, bool):
            raise Invariant(f"`in legal_moves` gave {r!r}")
    elif op == "is_legal":
        s.is_legal(x)
    elif op == "perft":
        from games._state import perft
        perft(s, x)
    elif op == "random_games":
        from games._state import random_games
        random_games(s, x, 0)


def ex_agent_spec(args):
    from search_ext.agents import make_agent
    make_agent(decode(args["text"]), args.get("game", "tic_tac_toe"))


def ex_agent_choose(args):
    import games
    from search_ext.agents import make_agent
    agent = make_agent(args["agent"], args["game"])
    target = args.get("state_game")
    if target is None:
        state = None
    else:
        state = games.new_state(target)
        if args.get("position"):
            state.set_position(args["position"])
    a = agent.choose(state)
    if not state.is_legal(a):
        raise Invariant(f"choose returned {a!r}, not a legal action")


def ex_config(args):
    from descent.config import load_config
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "c.toml"
        p.write_text(args["toml"])
        load_config(p)


def ex_duration(args):
    from descent.config import parse_duration, parse_durations
    (parse_durations if args.get("many") else parse_duration)(decode(args["text"]))


def ex_budget(args):
    from descent.tournament import parse_budget
    parse_budget(decode(args["text"]))


# ---- files ---------------------------------------------------------------------------------------

_CKPT: dict = {}


def _checkpoints(d: Path):
    """A real milestone checkpoint and a real rolling state of a small tic-tac-toe network."""
    if "w" in _CKPT:
        return _CKPT["w"], _CKPT["s"]
    import games
    from training.network import build_model, make_optimizer, save_state, save_weights
    info = games.load("tic_tac_toe")
    net = {"filters": 4, "blocks": 1, "head_units": 4}
    model = build_model(info.planes_shape, **net)
    opt = make_optimizer(model, 1e-3)
    base = {"game": info.spec, "game_version": info.version, "member": 0, "seed": 0,
            "config": {"network": net, "selfplay": {}, "training": {}}}
    w = d / "base.weights.h5"
    save_weights(w, model, {**base, "milestone": "1m", "milestone_seconds": 60.0, "train_seconds": 61.0,
                            "games": 3, "network": net, "planes_shape": list(info.planes_shape)})
    s = d / "latest.h5"
    save_state(s, model, opt, {**base, "counters": {"games": 3, "examples": 20, "train_seconds": 61.0,
                                                    "updates": 2, "milestones_done": ["1m"], "rng": None,
                                                    "seed": 0}})
    _CKPT["w"], _CKPT["s"] = w.read_bytes(), s.read_bytes()
    return _CKPT["w"], _CKPT["s"]


def _set_path(obj, path, value):
    *head, last = path
    for k in head:
        obj = obj[k]
    if value == "$delete":
        del obj[last]
    else:
        obj[last] = value


def ex_checkpoint(args):
    import h5py
    import numpy as np
    from training.network import load_network, read_meta
    with tempfile.TemporaryDirectory() as d:
        d = Path(d)
        wbytes, sbytes = _checkpoints(d)
        kind = args["file"]
        p = d / ("x.weights.h5" if kind == "weights" else "latest.h5")
        p.write_bytes(wbytes if kind == "weights" else sbytes)
        mut = args["mutation"]
        with h5py.File(p, "r+") as f:
            if mut["kind"] == "meta_raw":
                f.attrs["meta"] = mut["value"]
            elif mut["kind"] == "meta_path":
                meta = json.loads(f.attrs["meta"])
                _set_path(meta, mut["path"], decode(mut["value"]))
                f.attrs["meta"] = json.dumps(meta)
            elif mut["kind"] == "format":
                f.attrs["format"] = mut["value"]
            elif mut["kind"] == "no_meta":
                del f.attrs["meta"]
            elif mut["kind"] == "weights_dataset":
                del f["weights"]
                f.create_dataset("weights", data=np.zeros(3))
            elif mut["kind"] == "link_loop":
                del f["weights"]
                f["weights"] = h5py.SoftLink("/weights")
            elif mut["kind"] == "nan_weights":
                for k in f["weights"]:
                    ds = f["weights"][k]
                    ds[...] = np.full(ds.shape, float(mut.get("value", "nan")))
            elif mut["kind"] == "weight_text":
                k = sorted(f["weights"])[0]
                del f["weights"][k]
                f["weights"].create_dataset(k, data=np.array([b"abc"]))
        if mut["kind"] == "truncate":
            data = p.read_bytes()
            p.write_bytes(data[: int(len(data) * mut["fraction"])])
        if args.get("loader") == "read_meta":
            read_meta(p)
        else:
            load_network(p)


def ex_json_file(args):
    """run.json / milestone JSON / pools.json written with ``content`` and read by the command
    that reads it."""
    import games  # noqa: F401
    with tempfile.TemporaryDirectory() as d:
        run = Path(d) / "run"
        (run / "member_00").mkdir(parents=True)
        good_run = {"game": "tic_tac_toe", "config": {"network": {}}, "seed": 0, "format": "descent-run-1"}
        good_ms = {"game": "tic_tac_toe", "member": 0, "milestone": "1m", "milestone_seconds": 60.0,
                   "train_seconds": 61.0, "games": 3}
        files = {"run": run / "run.json", "milestone": run / "member_00" / "milestone_1m.json",
                 "pools": run / "pools.json"}
        (run / "run.json").write_text(json.dumps(good_run))
        files["milestone"].write_text(json.dumps(good_ms))
        (run / "member_00" / "milestone_1m.weights.h5").write_bytes(b"")
        files[args["file"]].write_text(args["content"])
        reader = args["reader"]
        if reader == "list_checkpoints":
            from training.run import list_checkpoints
            list_checkpoints(run, None)
        elif reader == "find_nets":
            from descent.tournament import find_nets
            find_nets(run, "tic_tac_toe")
        elif reader == "evaluate":
            from descent.tournament import evaluate
            evaluate(run, "tic_tac_toe", ["minimax"], ["iterations=1"], progress=False,
                     db_path=Path(d) / "r.db")
        elif reader == "check_run":
            from training.run import check_run
            check_run(run, "tic_tac_toe", {"network": {}}, 0)


def _db_digest(p: Path) -> str:
    """The database's bytes and the names of the files beside it (-wal, -shm, -journal)."""
    h = hashlib.sha256()
    for q in sorted(p.parent.glob(p.name + "*")):
        h.update(q.name.encode())
        if q == p:
            h.update(q.read_bytes())
    return h.hexdigest()


def ex_results_db(args):
    import sqlite3
    from descent.report import make_report
    with tempfile.TemporaryDirectory() as d:
        db = Path(d) / "run" / "results.db"
        db.parent.mkdir()
        kind = args["db"]
        if kind == "empty":
            db.write_bytes(b"")
        elif kind == "garbage":
            db.write_bytes(bytes(range(256)) * 8)
        elif kind == "foreign":
            con = sqlite3.connect(db)
            con.execute("CREATE TABLE foo (a TEXT)")
            con.execute("INSERT INTO foo VALUES ('x')")
            con.commit()
            con.close()
        else:
            from descent.results import ResultsDB
            with ResultsDB(db) as r:
                row = {"match_key": "k1", "stage": "evaluate", "game": "tic_tac_toe",
                       "algorithm": "minimax", "budget": "time=0.1", "agent_a": "a", "agent_b": "b",
                       "net_a": "n", "net_b": "m", "a_first": 1, "moves": "", "result": 1, "score": 0.5,
                       "a_result": 1, "a_score": 0.5, "plies": 5, "seconds_a": 0.1, "seconds_b": 0.1,
                       "seed": 1}
                r.insert(row)
                r.insert(dict(row, match_key="k2"))
            con = sqlite3.connect(db)
            try:
                with con:
                    for col, value in decode(args.get("row", {})).items():
                        con.execute(f"UPDATE matches SET {col} = ? WHERE match_key = 'k2'", (value,))
            except sqlite3.Error as exc:
                return "skip", f"cannot store that row: {exc}"
            finally:
                con.close()
        before = _db_digest(db)
        try:
            make_report([db], Path(d) / "report")
        finally:
            if _db_digest(db) != before:
                raise Invariant("report modified the database it reads")


def ex_cli(args):
    from click.testing import CliRunner
    from descent.cli import cli
    with tempfile.TemporaryDirectory() as d:
        argv = [a.replace("$TMP", d) for a in args["argv"]]
        try:
            runner = CliRunner(mix_stderr=False)
        except TypeError:
            runner = CliRunner()
        res = runner.invoke(cli, argv, catch_exceptions=True, input=args.get("input", ""))
        out = (res.stdout or "") + (getattr(res, "stderr", "") or "")
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        tb = "".join(traceback.format_exception(type(res.exception), res.exception,
                                                res.exception.__traceback__))
        return "traceback", f"{type(res.exception).__name__}: {res.exception}"[:300] + " | " + tb[-300:]
    if res.exit_code == 0:
        return "accepted", out[-200:]
    if res.exit_code == 2 and "Error:" in out and "Traceback" not in out:
        err_lines = [l for l in out.splitlines() if "Error:" in l]
        tail = out[out.index("Error:"):].strip().splitlines()
        if len(tail) > 1:
            return "multiline", out[-300:]
        return "refused", err_lines[-1][:300]
    return "traceback", f"exit {res.exit_code}: {out[-300:]}"


def ex_api(args):
    """A public entry point of games/search_ext called with a bad value (tests/fuzz/api.py)."""
    from tests.fuzz import api
    api.call(args)


EXECUTORS = {name[3:]: fn for name, fn in globals().items() if name.startswith("ex_")}


def run_case(case):
    from games.errors import GameError
    try:
        r = EXECUTORS[case["kind"]](case["args"])
        if isinstance(r, tuple):
            return r
        return "accepted", ""
    except Invariant as exc:
        return "invariant", str(exc)[:300]
    except GameError as exc:
        msg = str(exc)
        if "\n" in msg:
            return "multiline", msg[:300]
        return "refused", msg[:300]
    except Exception as exc:          # noqa: BLE001 - what the harness is looking for
        return "traceback", f"{type(exc).__name__}: {exc}"[:300]
    except BaseException as exc:      # SystemExit, KeyboardInterrupt from the code under test
        return "traceback", f"{type(exc).__name__}: {exc}"[:300]


MEMORY_LIMIT = int(os.environ.get("FUZZ_MEMORY_LIMIT", 3 << 30))


def main():
    # an input that makes the code under test allocate without bound (a board row '999999999')
    # must fail here quickly, not take the machine's memory
    import resource
    resource.setrlimit(resource.RLIMIT_DATA, (MEMORY_LIMIT, MEMORY_LIMIT))
    cases = json.loads(Path(sys.argv[1]).read_text())
    first = int(sys.argv[2])
    # the protocol gets a private copy of stdout; whatever the code under test prints (Python or C
    # level) goes to stderr
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    for i in range(first, len(cases)):
        out.write(json.dumps({"start": i}) + "\n")
        out.flush()
        outcome, detail = run_case(cases[i])
        out.write(json.dumps({"i": i, "outcome": outcome, "detail": detail}) + "\n")
        out.flush()
    out.write(json.dumps({"done": True}) + "\n")
    out.flush()


if __name__ == "__main__":
    main()
