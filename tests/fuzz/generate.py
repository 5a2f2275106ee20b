"""Generators of hostile (and valid) inputs for every parser, agent spec, config key, file loader and
CLI option. Each returns cases for ``tests/fuzz/runner.py``: ``{"kind", "args", "expect"}`` with
``expect`` ``"refuse"`` (must be refused with a documented error), ``"accept"`` (must work) or
``"any"`` (either, but never a crash, hang or traceback).

Generators are driven by a ``random.Random`` (``tests/test_fuzz.py`` draws it from Hypothesis,
``bench/bench_fuzz.py`` from a fixed seed), so a run is reproducible.
"""
from __future__ import annotations

import json
import random

GAME_SPECS = [
    "tic_tac_toe", "reversi", "reversi(size=6)", "breakthrough", "breakthrough(rows=5,cols=5)",
    "outer_open_gomoku(size=7)", "connect6(size=9)", "chess", "xiangqi", "international_draughts",
    "international_draughts(board=8)", "lines_of_action", "lines_of_action(board=6)", "havannah(base=4)",
    "havannah(base=5,swap=false)", "tapatan", "tapatan(start=preset)", "alquerque",
    "alquerque(rules=ludii)", "tsoro_yematatu", "five_field_kono",
]

NONASCII_DIGITS = ["\u00b2", "\u00b9", "\uff11", "\uff15", "\u0663", "\u0967", "\u2467", "\U0001d7d9"]
NONASCII_SEPS = ["\uff0c", "\u3001", "\u2044", "\uff0f", "\u00a0", "\u2003", "\uff1d", "\uff1a"]
BAD_NUMBERS = ["nan", "NaN", "-nan", "inf", "-inf", "Infinity", "1e400", "-1e400", "", " ", "abc", "1_000",
               "0x10", "1.5.2", "--1", "+", "1e", "99999999999999999999999999", "9" * 400,
               "\uff11", "\u00b2", "\u0663", "1\u00a0"]
F = lambda x: {"$float": x}          # noqa: E731 - tags for values JSON cannot carry
I = lambda x: {"$int": x}            # noqa: E731
NONE = {"$none": True}
TRUE = {"$bool": True}


def _case(kind, args, expect, **extra):
    return {"kind": kind, "args": args, "expect": expect, **extra}


# ---- game specs ----------------------------------------------------------------------------------

def specs(rng: random.Random, n: int) -> list[dict]:
    params = {"reversi": ["size"], "breakthrough": ["rows", "cols"], "havannah": ["base", "swap"],
              "connect6": ["size"], "international_draughts": ["board"], "lines_of_action": ["board"]}
    out = [_case("spec", {"text": s}, "accept") for s in rng.sample(GAME_SPECS, min(n // 4, len(GAME_SPECS)))]
    while len(out) < n:
        name = rng.choice(list(params))
        key = rng.choice(params[name])
        r = rng.random()
        if r < 0.6:
            value = rng.choice(BAD_NUMBERS + ["-1", "0", "1.5", "2.0", "10**9", "99999999999",
                                               "6" + rng.choice(NONASCII_DIGITS)])
            out.append(_case("spec", {"text": f"{name}({key}={value})"}, "refuse"))
        elif r < 0.75:
            sep = rng.choice(NONASCII_SEPS)
            out.append(_case("spec", {"text": f"{name}({key}{sep}6)"}, "refuse"))
        elif r < 0.85:
            out.append(_case("spec", {"text": rng.choice([NONE, 5, "", "  ", "x" * 5000, f"{name}(",
                                                          f"{name}()()", f"{name}({key}=6,{key}=6)"])},
                             "refuse"))
        else:
            text = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz_(),=0123456789 .-\u00e9\u00b2")
                           for _ in range(rng.randint(0, 30)))
            out.append(_case("spec", {"text": text}, "any"))
    return out[:n]


# ---- positions -----------------------------------------------------------------------------------

def _start_positions():
    import games
    return {g: games.new_state(g).position() for g in GAME_SPECS}


def _played_positions(rng, game, k):
    import games
    s = games.new_state(game)
    out = []
    for _ in range(k):
        if s.is_game_over():
            break
        s.push(rng.choice(s.legal_actions_list()))
        out.append(s.position())
    return out


def positions(rng: random.Random, n: int) -> list[dict]:
    starts = _start_positions()
    out = []
    while len(out) < n:
        game = rng.choice(GAME_SPECS)
        text = starts[game]
        r = rng.random()
        if r < 0.12:
            played = _played_positions(rng, game, rng.randint(1, 12))
            out.append(_case("position", {"game": game, "text": rng.choice(played) if played else text},
                             "accept"))
        elif r < 0.27:
            digits = [i for i, ch in enumerate(text) if ch.isdigit()]
            d = rng.choice(NONASCII_DIGITS)
            if digits:
                i = rng.choice(digits)
                bad = text[:i] + d + text[i + 1:]
            else:
                i = rng.randrange(len(text) + 1)
                bad = text[:i] + d + text[i:]
            out.append(_case("position", {"game": game, "text": bad}, "refuse"))
        elif r < 0.37:
            head, sep, tail = text.partition("/")
            run = rng.choice(["999999999", "9" * rng.randint(10, 60), "99", "1" + "0" * 12])
            bad = run + sep + tail if sep else run + " " + text
            out.append(_case("position", {"game": game, "text": bad}, "refuse"))
        elif r < 0.47:
            tokens = text.split()
            if len(tokens) >= 2 and len(tokens[1]) == 1:
                tokens[1] = tokens[1] + rng.choice(["x", "o", "w", "b", tokens[1]])
                out.append(_case("position", {"game": game, "text": " ".join(tokens)}, "refuse"))
        elif r < 0.55:
            out.append(_case("position", {"game": game,
                                          "text": rng.choice(["", "   ", NONE, 7, text + " " + "x" * 9000,
                                                              "/" * 5000, text + "\u00a0x",
                                                              text.replace(" ", "\u00a0") + "\u2003"])},
                             "refuse"))
        elif r < 0.62:
            tokens = text.split()
            if len(tokens) >= 3 and tokens[-1].isdigit():
                tokens[-1] = rng.choice(["9" * rng.randint(10, 5000), "-1", "1.5", "\u00b2",
                                         "1" + rng.choice(NONASCII_DIGITS)])
                out.append(_case("position", {"game": game, "text": " ".join(tokens)}, "refuse"))
        else:
            chars = list(text)
            for _ in range(rng.randint(1, 3)):
                op = rng.random()
                i = rng.randrange(len(chars) + 1)
                if op < 0.4 and chars:
                    chars[min(i, len(chars) - 1)] = chr(rng.randint(32, 126))
                elif op < 0.7:
                    chars.insert(i, chr(rng.randint(32, 126)))
                elif chars:
                    del chars[min(i, len(chars) - 1)]
            out.append(_case("position", {"game": game, "text": "".join(chars)}, "any"))
    return out[:n]


# ---- the State API -------------------------------------------------------------------------------

def state_api(rng: random.Random, n: int) -> list[dict]:
    import games
    bad_values = [F("nan"), F("inf"), F("-inf"), 1.5, 2.0, TRUE, NONE, I("10**30"), I("2**31"), I("2**63"),
                  I("-2**63"), -1, [1], {"a": 1}, I("10**10")]
    out = []
    while len(out) < n:
        game = rng.choice(GAME_SPECS)
        info = games.load(game)
        s = info.new_state()
        legal = s.legal_actions_list()
        r = rng.random()
        if r < 0.35:
            op = rng.choice(["push", "move_to_str", "parse_move", "is_legal", "contains"])
            value = rng.choice(bad_values + [info.num_actions, -1])
            expect = "accept" if op in ("is_legal", "contains") else "refuse"
            out.append(_case("state_api", {"game": game, "op": op, "value": value}, expect))
        elif r < 0.5:
            a = rng.choice(legal)
            op = rng.choice(["push", "move_to_str", "contains", "is_legal"])
            out.append(_case("state_api", {"game": game, "op": op, "value": a}, "accept"))
        elif r < 0.65:
            text = s.move_to_str(rng.choice(legal))
            out.append(_case("state_api", {"game": game, "op": rng.choice(["push", "parse_move"]),
                                           "value": text}, "accept"))
            digits = [i for i, ch in enumerate(text) if ch.isdigit()]
            if digits:
                i = rng.choice(digits)
                bad = text[:i] + rng.choice(NONASCII_DIGITS) + text[i + 1:]
            else:
                bad = text + rng.choice(NONASCII_DIGITS)
            out.append(_case("state_api", {"game": game, "op": rng.choice(["push", "parse_move"]),
                                           "value": bad}, "refuse"))
        elif r < 0.75:
            out.append(_case("state_api", {"game": game, "op": rng.choice(["push", "parse_move"]),
                                           "value": rng.choice(["", "  ", "x" * 10000, "\x00", "9" * 5000,
                                                                "a" + "9" * 30, NONE])}, "refuse"))
        elif r < 0.85:
            op = rng.choice(["perft", "random_games"])
            value = rng.choice([F("nan"), 1.5, -1, I("10**30"), "3", NONE, TRUE] +
                               ([65, I("10**10")] if op == "perft" else [I("10**12")]))
            out.append(_case("state_api", {"game": game, "op": op, "value": value}, "refuse"))
        else:
            text = "".join(chr(rng.randint(32, 126)) for _ in range(rng.randint(1, 12)))
            out.append(_case("state_api", {"game": game, "op": rng.choice(["push", "parse_move"]),
                                           "value": text}, "any"))
    return out[:n]


# ---- agent specs ---------------------------------------------------------------------------------

_INT_COUNT = {"bad": ["0", "-1", "1.5", "2.0", "99999999999", "99999999999999999999"], "good": ["1", "3"]}
_KEYS = {
    # key: (algorithms, bad values, good values, extra keys needed)
    "iterations": (["minimax", "minibal_n", "minibal_plus", "descent", "mcts"], _INT_COUNT["bad"], ["5"], ""),
    "depth": (["alphabeta", "hybrid", "predictive", "noisy"], _INT_COUNT["bad"], ["1", "2"], ""),
    "nodes": (["alphabeta", "predictive", "noisy"], _INT_COUNT["bad"], ["50"], ""),
    "playouts": (["minimax", "alphabeta", "hybrid"], _INT_COUNT["bad"], ["2"], ",eval=playout"),
    "playout_cap": (["minimax", "alphabeta"], _INT_COUNT["bad"], ["10"], ",eval=playout"),
    "seed": (["minimax", "mcts", "random", "alphabeta", "gaussian"], ["-1", "1.5", "99999999999999999999999"],
             ["0", "7"], ""),
    "time": (["minimax", "mcts", "alphabeta", "predictive", "descent"], ["0", "-1", "-0.5"], ["0.01"], ""),
    "c": (["mcts"], ["-1", "-0.001"], ["0", "1.4"], ",iterations=5"),
    "max_nodes": (["mcts", "minimax", "descent", "alphadda"], ["0", "-5", "99999999999"],
                  ["16", "100000"], ""),
    "ps": (["predictive"], ["-0.1", "1.5", "2"], ["0.5", "1"], ""),
    "noise": (["noisy"], ["-1"], ["0", "0.5"], ""),
    "scale": (["noisy"], ["0", "-1"], ["2"], ""),
    "a": (["alphadda"], ["1e300", "-1e300"], ["-1.5", "0"], ""),
    "b": (["alphadda"], ["1e300"], ["-1.5"], ""),
    "history": (["alphadda"], _INT_COUNT["bad"], ["5"], ""),
    "max_iterations": (["alphadda"], _INT_COUNT["bad"], ["50"], ""),
    "mu": (["gaussian"], ["5", "-1", "1.01"], ["0.4", "1"], ",level=custom,sigma=0.3"),
    "sigma": (["gaussian"], ["0", "-1"], ["0.3"], ",level=custom,mu=0.5"),
    "proven_depth": (["minibal_plus", "minibal_n"], ["-2", "1.5"], ["-1", "3"], ""),
    "decision": (["minimax", "descent"], ["xyz", "BEST", "best\u00a0"], ["safe", "best"], ""),
    "proven_wins": (["minibal_plus"], ["maybe", "2"], ["true", "off"], ""),
    "star": (["predictive"], ["none", "First"], ["all", "first"], ""),
    "level": (["gaussian"], ["expert", "EASY"], ["easy", "hard"], ""),
    "net": (["minimax", "alphabeta"], ["/nonexistent/x.h5", "/tmp", "/dev/null"], [], ""),
}


def agent_specs(rng: random.Random, n: int) -> list[dict]:
    out = []
    while len(out) < n:
        key = rng.choice(list(_KEYS))
        algs, bad, good, extra = _KEYS[key]
        alg = rng.choice(algs)
        numeric = key not in ("decision", "proven_wins", "star", "level", "net")
        r = rng.random()
        if r < 0.55:
            pool = bad + (BAD_NUMBERS if numeric else ["", " ", "\u00e9"])
            value = rng.choice(pool)
            if value.strip() == "" and rng.random() < 0.5:
                value = ""
            expect = "refuse"
        elif r < 0.7 and good:
            value, expect = rng.choice(good), "accept"
        elif r < 0.8:
            value = rng.choice(good or ["1"]) + rng.choice(NONASCII_DIGITS + NONASCII_SEPS)
            expect = "refuse"
        else:
            value = "".join(chr(rng.randint(32, 126)) for _ in range(rng.randint(0, 8))).replace(",", "")
            expect = "any"
        text = f"{alg}:{key}={value}{extra}"
        if alg == "gaussian" and key not in ("mu", "sigma", "level", "seed"):
            text = f"gaussian:base={alg},{key}={value}"
        game = rng.choice(["tic_tac_toe", "reversi(size=6)", "breakthrough(rows=5,cols=5)"])
        out.append(_case("agent_spec", {"text": text, "game": game}, expect))
        if rng.random() < 0.1:
            out.append(_case("agent_spec", {"text": rng.choice([
                "", " ", NONE, 5, "mcts:", "mcts:iterations", "mcts:=5", "mcts:iterations=5,iterations=6",
                "MCTS", "\uff4dcts", "mcts\uff1aiterations=5", "mcts:iterations\uff1d5", "x" * 10000,
                "gaussian:base=gaussian", "gaussian:base=random", "gaussian:level=custom",
                "gaussian:mu=0.5,sigma=0.2"]), "game": "tic_tac_toe"}, "any"))
    return out[:n]


AGENTS = ["alphabeta:depth=1", "mcts:iterations=20", "hybrid:depth=1,playouts=2", "predictive:depth=1",
          "noisy:depth=1", "gaussian:base=alphabeta,depth=1", "minimax:iterations=10",
          "minibal_plus:iterations=10", "descent:iterations=10", "alphadda:max_iterations=10", "random"]
OWN_POSITION = {"tic_tac_toe": "x2/1o1/3 x", "reversi(size=6)": None, "breakthrough(rows=5,cols=5)": None}
OVER_POSITION = {"tic_tac_toe": "xxx/oo1/3 o"}


def agent_choose(rng: random.Random, n: int) -> list[dict]:
    out = []
    while len(out) < n:
        agent = rng.choice(AGENTS)
        game = rng.choice(list(OWN_POSITION))
        r = rng.random()
        if r < 0.25:
            out.append(_case("agent_choose", {"agent": agent, "game": game, "state_game": game,
                                              "position": OWN_POSITION[game]}, "accept"))
        elif r < 0.45 and game in OVER_POSITION:
            out.append(_case("agent_choose", {"agent": agent, "game": game, "state_game": game,
                                              "position": OVER_POSITION[game]}, "refuse"))
        else:
            other = rng.choice([None, "chess", "reversi", "reversi(size=6)", "tic_tac_toe",
                                "breakthrough", "international_draughts"])
            if other == game:
                continue
            out.append(_case("agent_choose", {"agent": agent, "game": game, "state_game": other},
                             "refuse"))
    return out[:n]


# ---- config, durations, budgets ------------------------------------------------------------------

CONFIG_KEYS = {
    "tour": ["perft_depth", "random_games"], "network": ["filters", "blocks", "head_units"],
    "selfplay": ["iterations", "time", "epsilon", "exploration_floor", "max_nodes"],
    "training": ["replay_games", "sample_fraction", "min_sample", "batch_size", "learning_rate"],
    "run": ["population", "workers", "threads"],
}
TOML_BAD = ["nan", "inf", "-inf", "+nan", "-1", "-0.5", "1e400", "9223372036854775807", '"abc"', "true",
            "[1]", "{a = 1}", '"\uff15"', '"nan"']
DURATIONS_BAD = ["nan", "inf", "-inf", "1e400s", "", " ", "-5m", "0s", "0", "abc", "\uff15m", "5\u00b2m",
                 "5 m m", "1_0m", "nanm", "infh", "99999999999999999999d", "5x", "m", "1e9d"]
DURATIONS_GOOD = ["20m", "1.5h", "90s", "70d", "30", "0.5m"]


def configs(rng: random.Random, n: int) -> list[dict]:
    out = []
    while len(out) < n:
        r = rng.random()
        if r < 0.6:
            section = rng.choice(list(CONFIG_KEYS))
            key = rng.choice(CONFIG_KEYS[section])
            value = rng.choice(TOML_BAD)
            if value == "-0.5" and key in ("time",):
                value = "-1"
            toml = f'[game]\nspec = "tic_tac_toe"\n[{section}]\n{key} = {value}\n'
            out.append(_case("config", {"toml": toml}, "refuse"))
        elif r < 0.8:
            key = rng.choice(["budget", "milestones"])
            value = rng.choice(DURATIONS_BAD + ["20m,20m", "1h,60m", "20m,,1h", ",", "20m\uff0c1h"])
            toml = f'[game]\nspec = "tic_tac_toe"\n[run]\n{key} = {json.dumps(value)}\n'
            out.append(_case("config", {"toml": toml}, "refuse"))
        elif r < 0.85:
            spec = rng.choice(['"chess(size=3)"', '""', "5", '"tic_tac_toe\u00b2"', '"nope"'])
            out.append(_case("config", {"toml": f"[game]\nspec = {spec}\n"}, "refuse"))
        elif r < 0.9:
            extra = rng.choice(['[nope]\na = 1\n', '[run]\nnope = 1\n', 'run = 5\n', '[run]\nray = 5\n',
                                '[run]\nray = "h\u00e9:1"\n', '[selfplay]\nexploration = "x"\n',
                                '[training]\naugment = "yes"\n', '[run.x]\na = 1\n', '[[run]]\n',
                                "\x00", "[game\n"])
            out.append(_case("config", {"toml": '[game]\nspec = "tic_tac_toe"\n' + extra}, "refuse"))
        else:
            out.append(_case("config", {"toml": '[game]\nspec = "tic_tac_toe"\n[run]\nbudget = "20m"\n'
                                                'milestones = "5m,20m"\n'}, "accept"))
    return out[:n]


def durations(rng: random.Random, n: int) -> list[dict]:
    out = []
    while len(out) < n:
        r = rng.random()
        if r < 0.5:
            out.append(_case("duration", {"text": rng.choice(DURATIONS_BAD + [NONE, 5])}, "refuse"))
        elif r < 0.7:
            out.append(_case("duration", {"text": rng.choice(DURATIONS_GOOD)}, "accept"))
        elif r < 0.85:
            out.append(_case("duration", {"text": rng.choice(["20m,20m", "1h,60m", "20m,,1h", "", ",",
                                                              "5m,nan", "5m,\uff15m"]), "many": True},
                             "refuse"))
        else:
            out.append(_case("budget", {"text": rng.choice(["time=nan", "time=inf", "iterations=1.5",
                                                            "iterations=abc", "nan", "inf", "", "x=1",
                                                            "time=", "iterations=0", "time=-1",
                                                            "iterations=99999999999999999999",
                                                            "time=\uff11", "1e400"])}, "refuse"))
    return out[:n]


# ---- files ---------------------------------------------------------------------------------------

def checkpoints(rng: random.Random, n: int) -> list[dict]:
    muts = [{"kind": "meta_raw", "value": v} for v in ["[1, 2]", "null", '"abc"', "{", "", "NaN", "1e400"]]
    for v in [-1, 0, NONE, "abc", 2.5, I("10**9"), TRUE]:
        for k in ("filters", "blocks", "head_units"):
            muts.append({"kind": "meta_path", "path": ["network", k], "value": v, "file": "weights"})
            muts.append({"kind": "meta_path", "path": ["config", "network", k], "value": v, "file": "state"})
    for v in [[0, 0, 0], [3, 3], "abc", [3, 3, 99], [-3, 3, 2], NONE]:
        muts.append({"kind": "meta_path", "path": ["planes_shape"], "value": v, "file": "weights"})
    for v in ["chess", "nope", NONE, 5, "tic_tac_toe\u00b2", ""]:
        muts.append({"kind": "meta_path", "path": ["game"], "value": v})
    for key, vals in {"games": [-5, "x", NONE, 1.5, I("10**30")], "train_seconds": [-1, "x", NONE],
                      "milestones_done": ["x", NONE, [1]], "rng": ["x", {"bit_generator": "PCG64"}, 5]}.items():
        for v in vals:
            muts.append({"kind": "meta_path", "path": ["counters", key], "value": v, "file": "state",
                         "loader": "read_meta"})
    muts.append({"kind": "meta_path", "path": ["counters"], "value": "$delete", "file": "state",
                 "loader": "read_meta"})
    muts += [{"kind": "format", "value": v} for v in ["x", "", "descent-state-1x"]]
    muts += [{"kind": "no_meta"}, {"kind": "weights_dataset"}, {"kind": "link_loop"},
             {"kind": "nan_weights"}, {"kind": "nan_weights", "value": "inf"}, {"kind": "weight_text"}]
    muts += [{"kind": "truncate", "fraction": f} for f in (0.0, 0.1, 0.5, 0.9)]
    out = []
    for m in rng.sample(muts, min(n, len(muts))):
        file = m.get("file") or rng.choice(["weights", "state"])
        loader = m.get("loader") or "load_network"
        out.append(_case("checkpoint", {"file": file, "loader": loader, "mutation": m}, "refuse",
                         timeout=60))
    for file in ("weights", "state"):
        out.append(_case("checkpoint", {"file": file, "loader": "load_network",
                                        "mutation": {"kind": "none"}}, "accept", timeout=60))
    return out


def json_files(rng: random.Random, n: int) -> list[dict]:
    contents = ["[]", "null", '"x"', "{}", "{", "", "NaN", "[1, 2]", '{"game": 5}', '{"game": null}',
                '{"game": "tic_tac_toe"}', '{"game": "tic_tac_toe", "high": 5, "low": []}',
                '{"game": "tic_tac_toe", "high": [{"net": 1}], "low": [{"net": "a", "path": "b"}]}',
                '{"game": "tic_tac_toe", "member": "x", "milestone": "1m"}',
                '{"game": "tic_tac_toe", "member": -1, "milestone": "1m"}',
                '{"game": "tic_tac_toe", "seed": "x", "config": {}}', '{"game": "tic_tac_toe", "seed": 0}',
                "\xff\xfe", '{"game": "tic_tac_toe", "member": 0, "milestone": null}']
    readers = {"run": ["list_checkpoints", "find_nets", "check_run"], "milestone": ["list_checkpoints",
                                                                                     "find_nets"],
               "pools": ["evaluate"]}
    out = []
    while len(out) < n:
        file = rng.choice(list(readers))
        content = rng.choice(contents)
        out.append(_case("json_file", {"file": file, "content": content,
                                       "reader": rng.choice(readers[file])}, "refuse"))
    return out


def results_dbs(rng: random.Random, n: int) -> list[dict]:
    rows = [{"budget": "abc"}, {"budget": "time=nan"}, {"budget": "time="}, {"budget": "iterations=x"},
            {"a_result": "text"}, {"a_result": 7}, {"a_score": "nan"}, {"a_score": 5.0},
            {"a_score": "x"}, {"budget": NONE}, {"algorithm": NONE}, {"game": 5}]
    out = [_case("results_db", {"db": d}, "refuse") for d in ("empty", "garbage", "foreign")]
    while len(out) < n:
        out.append(_case("results_db", {"db": "rows", "row": rng.choice(rows)}, "refuse"))
    out.append(_case("results_db", {"db": "rows", "row": {}}, "accept"))
    return out


# ---- command line --------------------------------------------------------------------------------

def cli(rng: random.Random, n: int) -> list[dict]:
    out = []
    pos_cases = positions(rng, 40)
    while len(out) < n:
        r = rng.random()
        if r < 0.15:
            c = rng.choice([p for p in pos_cases if isinstance(p["args"]["text"], str)])
            out.append(_case("cli", {"argv": ["show", c["args"]["game"], "--position", c["args"]["text"]]},
                             c["expect"]))
        elif r < 0.22:
            out.append(_case("cli", {"argv": ["show", rng.choice(["tic_tac_toe", "chess"]), "--moves",
                                              rng.choice(["a\uff11", "e2e\u00b2", "9" * 50, "zz"])]}, "refuse"))
        elif r < 0.3:
            out.append(_case("cli", {"argv": rng.choice([
                ["perft", "tic_tac_toe", rng.choice(["65", "-1", "abc", "1e400", "\uff11"])],
                ["random-match", "tic_tac_toe", "--games", rng.choice(["0", "-1", "99999999999999", "abc"])],
                ["random-match", "tic_tac_toe", "--seed", rng.choice(["-1", "99999999999999999999999"])],
                ["games", rng.choice(["nope", "reversi(size=\uff16)", "x" * 5000, ""])]])}, "refuse"))
        elif r < 0.5:
            spec = rng.choice(agent_specs(rng, 5))
            if not isinstance(spec["args"]["text"], str) or "net=" in spec["args"]["text"]:
                continue
            if "time=" in spec["args"]["text"] and spec["expect"] != "refuse":
                continue
            if spec["args"]["text"].startswith("gaussian:base=") and "time" in spec["args"]["text"]:
                continue
            out.append(_case("cli", {"argv": ["match", spec["args"]["game"], "--first", spec["args"]["text"],
                                              "--second", "random", "--games", "1"]}, spec["expect"],
                             timeout=60))
        elif r < 0.6:
            out.append(_case("cli", {"argv": ["match", "tic_tac_toe", "--first", "random", "--second", "random",
                                              *rng.choice([["--games", "0"], ["--workers", "0"],
                                                           ["--seed", "-1"], ["--ray", "bogus:1"],
                                                           ["--games", "abc"]])]}, "refuse", timeout=60))
        elif r < 0.72:
            opt = rng.choice([["--budget", rng.choice(DURATIONS_BAD)],
                              ["--milestones", rng.choice(["20m,20m", "", "1h,60m", "nan", "5m,\uff15m"])],
                              ["--population", "0"], ["--workers", "0"], ["--config", "configs/chess.toml"],
                              ["--config", "$TMP/missing.toml"], ["--out", "/proc/x"],
                              ["--budget", "1m", "--milestones", "2m"]])
            argv = ["train", "tic_tac_toe", *opt]
            if "--out" not in opt:
                argv += ["--out", "$TMP/run"]
            out.append(_case("cli", {"argv": argv}, "refuse", timeout=30, slow_ok=True))
        elif r < 0.84:
            opt = rng.choice([["--times", rng.choice(["nan", "inf", "", "0", "-1", "abc", "0.1,,0.2"])],
                              ["--iterations", rng.choice(["abc", "1.5", "", "0", "\uff15"])],
                              ["--algorithms", rng.choice(["", " ", ",", "nope"])],
                              ["--opponent-time", rng.choice(["nan", "iterations=x", ""])]])
            out.append(_case("cli", {"argv": ["evaluate", "tic_tac_toe", "--run", "$TMP/run", *opt]},
                             "refuse"))
        elif r < 0.94:
            opt = rng.choice([["--time", rng.choice(["nan", "inf", "0", "-1", "1e400", "abc"])],
                              ["--iterations", rng.choice(["0", "-1", "99999999999999"])],
                              ["--save", rng.choice(["/proc/x/y", "$TMP", "$TMP/missing/dir/x.txt"])],
                              ["--net", rng.choice(["$TMP", "/nonexistent.h5"])],
                              ["--opponent", rng.choice(["mcts:time=inf", "mcts:c=nan", "nope"])]])
            out.append(_case("cli", {"argv": ["play", "tic_tac_toe", "--plain", *opt], "input": ""},
                             "refuse", timeout=60))
        elif r < 0.97:
            lines = [rng.choice(["a\uff11", "9" * 5000, "\x00", "undo", "hint", "moves", "help", "b2", "zz",
                                 "a1 a2", "\u00b2", "", "resign"]) for _ in range(rng.randint(1, 6))]
            out.append(_case("cli", {"argv": ["play", "tic_tac_toe", "--plain", "--net", "none",
                                              "--iterations", "5"], "input": "\n".join(lines) + "\n"},
                             "any", timeout=60))
        elif r < 0.985:
            opt = rng.choice([["--agent", rng.choice(["mcts:time=nan", "", "nope", "minimax:iterations=0"])],
                              ["--games-per-pair", rng.choice(["0", "abc", "\uff12"])],
                              ["--opening-plies", "-1"], ["--workers", "0"]])
            out.append(_case("cli", {"argv": ["rank", "tic_tac_toe", "--run", "$TMP/none", *opt]}, "refuse"))
        elif r < 0.99:
            opt = rng.choice([["--budget", rng.choice(["nan", "", "1e400s"])], ["--milestones", "1m"],
                              ["--milestones", "1m,1m"], ["--algorithms", ""], ["--times", "nan"],
                              ["--rank-agent", "mcts:c=nan"], ["--opponent-time", "inf"],
                              ["--iterations", "1.5"], ["--population", "1"]])
            out.append(_case("cli", {"argv": ["pipeline", "tic_tac_toe", "--out", "$TMP/p", *opt]}, "refuse",
                             timeout=30, slow_ok=True))
        else:
            out.append(_case("cli", {"argv": rng.choice([["report", "--run", "$TMP"],
                                                         ["checkpoints", "--out", "/proc/x"],
                                                         ["report", "--run", "$TMP", "--game", "nope"]])},
                             "refuse"))
    return out[:n]


ALL = {"spec": specs, "position": positions, "state_api": state_api, "agent_spec": agent_specs,
       "agent_choose": agent_choose, "config": configs, "duration": durations, "json_file": json_files,
       "results_db": results_dbs, "cli": cli, "checkpoint": checkpoints}
