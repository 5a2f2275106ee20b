"""Issue 20 (item 7): every public entry point of ``games`` and ``search_ext`` given a bad argument
value raises a documented error class, never ``OverflowError``, a ``TypeError`` from Cython's
argument conversion, ``SystemError``, a crash or a hang.

The entry points are found by introspection, not listed by hand: for each game, every public
method of a fresh state; every public function of ``games._state``, ``games.registry``,
``games.boardtext``, ``games.symmetry`` and of each game module; the compiled searches
(``BestFirstSearch``, ``MCTS``, ``AlphaBeta``, ``StarMinimax``), their public methods, the
self-play pool's constructor and the evaluators; ``make_agent`` and every public method of an agent
of each algorithm. Each is called with each bad value in each argument
slot (the other slots hold a good value). ``cases()`` builds the cases in the parent; ``call(args)``
runs one in the child process of ``tests/fuzz/runner.py``, so that a crash or a hang fails one case.

Values that JSON cannot carry are tagged (``tests/fuzz/child.py``'s ``decode``), numpy scalars
as ``{"$np": ["int64", "10**12"]}``.
"""
from __future__ import annotations

import importlib
import inspect

# the values every slot gets: huge, negative, bool, float, NaN, infinity, None, text, numpy
BAD_VALUES = [
    {"$int": "2**63"}, {"$int": "10**12"}, {"$int": "-10**12"}, {"$int": "10**30"}, -1,
    {"$bool": True}, 1.5, {"$float": "nan"}, {"$float": "inf"}, {"$float": "-inf"}, {"$none": True},
    "x", "", [1], {"$np": ["int64", "10**12"]}, {"$np": ["int32", "-1"]}, {"$np": ["float64", "1.5"]},
]

GAMES = ["tic_tac_toe", "reversi(size=6)", "breakthrough(rows=5,cols=5)", "outer_open_gomoku(size=7)",
         "connect6(size=9)", "chess", "xiangqi", "international_draughts(board=8)",
         "lines_of_action(board=6)", "havannah(base=4)", "tapatan", "tapatan(start=preset)", "alquerque",
         "tsoro_yematatu", "five_field_kono"]

GAME_MODULES = ["games._state", "games.tic_tac_toe", "games.chess", "games.havannah", "games.alquerque",
                "games.breakthrough", "games.draughts", "games.xiangqi", "games.loa", "games.reversi",
                "games.connect", "games.kono", "games.tsoro", "games.tapatan"]
LIB_MODULES = ["games.registry", "games.boardtext", "games.symmetry", "search_ext.descent_core",
               "search_ext.predictive", "search_ext.evaluators"]
# games.validate is the checking layer itself (its ``what`` and ``error`` arguments come from the code)
# functions that are not entry points for outside values (decorators, registration, facts tables
# computed from checked parameters) or that enumerate a whole game (count_games on chess)
SKIP_FUNCTIONS = {"register", "facts", "count_games", "make_tree", "heuristic_evaluator",
                  "decided_floor", "estimate_scale"}

SEARCHES = {
    # class: (module, constructor keyword arguments to fuzz with their good values)
    "BestFirstSearch": ("search_ext.bestfirst", {"rule": "minimax", "descent": False, "decision": "best",
                                                 "take_proven_wins": False, "proven_win_depth": -1,
                                                 "max_nodes": 1000, "max_mb": 16}),
    "MCTS": ("search_ext.mcts", {"c": 1.0, "seed": 0, "max_nodes": 1000, "max_mb": 16}),
    "AlphaBeta": ("search_ext.alphabeta", {"tt_bits": 12}),
    "StarMinimax": ("search_ext.predictive", {"ps": 0.5, "star_all": False}),
}
POOL = {"iterations": 2, "seconds": 0.0, "games_in_flight": 1, "max_nodes": 10_000, "compact_at": -1,
        "max_example_bytes": 0}
EVALUATORS = {"PlayoutEvaluator": {"playouts": 2, "max_plies": 10, "use_score": False, "seed": 0},
              "RandomValueEvaluator": {"seed": 0}}

# a good value for an argument, by name (the game's state supplies moves and positions)
GOOD = {"depth": 1, "n_games": 1, "seed": 0, "base": 4, "rows": 5, "cols": 5, "sq": 0, "square": 0,
        "index": 0, "f": 0, "t": 1, "captured": 0, "sym": 0, "player": 0, "iterations": 2, "seconds": 0.0,
        "max_depth": 1, "nodes": 50, "e": 0.5, "epsilon": 0.0, "n": 3, "draws": 2, "ps": 0.5,
        "values": [0.0, 1.0], "r": 0, "c": 0, "h": 3, "w": 3, "height": 3, "width": 3,
        "symbols": ".xo", "game": "tic_tac_toe", "sides": "xo", "footer": "", "what": "square",
        "spec": "tic_tac_toe", "name": "tic_tac_toe"}
TEXT_GOOD = {"boardtext.parse_board": {"text": "x../.o./..."}, "boardtext.parse_square": {"text": "a1"},
             "boardtext.split_position": {"text": "x../.o./... x"},
             "boardtext.draw_grid": {"grid": [[0, 1, 2]] * 3}, "boardtext.format_board": {"grid": [[0, 1, 2]] * 3},
             "symmetry.transform_planes": {"x": "$planes"}}


def _public_functions(module):
    m = importlib.import_module(module)
    for name in sorted(dir(m)):
        obj = getattr(m, name)
        if (name.startswith("_") or name in SKIP_FUNCTIONS or "facts" in name or inspect.isclass(obj)
                or not callable(obj)
                or getattr(obj, "__module__", None) != module):
            continue
        yield name, obj


def _params(fn):
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    return [p for p in sig.parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


def _case(target: dict, slot: str, value, game: str) -> dict:
    return {"kind": "api", "args": {**target, "slot": slot, "value": value, "game": game},
            "expect": "any", "timeout": 60}


def cases(values=None) -> list[dict]:
    """Every (entry point, argument, bad value) triple, as runner cases."""
    import games
    from search_ext.agents import ALGORITHMS, make_agent
    assert {a.split(":")[0] for a in AGENTS} == set(ALGORITHMS), "a new algorithm: add it to AGENTS"
    values = BAD_VALUES if values is None else values
    out = []
    for spec in GAMES:
        state = games.new_state(spec)
        for name in sorted(dir(state)):
            fn = getattr(state, name)
            if name.startswith("_") or not callable(fn):
                continue
            for p in _params(fn) or []:
                out += [_case({"target": "state", "name": name}, p.name, v, spec) for v in values]
    for module in GAME_MODULES + LIB_MODULES:
        for name, fn in _public_functions(module):
            for p in _params(fn) or []:
                out += [_case({"target": "function", "module": module, "name": name}, p.name, v,
                              "tic_tac_toe") for v in values]
    for spec in ("tic_tac_toe", "reversi(size=6)"):
        out += [_case({"target": "registry", "name": n}, "spec", v, spec)
                for n in ("load", "new_state", "parse_spec") for v in values]
        for cls, (module, kwargs) in SEARCHES.items():
            for key in kwargs:
                out += [_case({"target": "search_init", "cls": cls}, key, v, spec) for v in values]
            for method, params in _search_methods(cls, module, spec):
                out += [_case({"target": "search_method", "cls": cls, "name": method}, p, v, spec)
                        for p in params for v in values]
        out += [_case({"target": "pool"}, key, v, spec) for key in POOL for v in values]
        for cls, kwargs in EVALUATORS.items():
            out += [_case({"target": "evaluator", "cls": cls}, key, v, spec) for key in kwargs for v in values]
        out += [_case({"target": "agent", "name": "make_agent"}, slot, v, spec)
                for slot in ("text", "game") for v in values]
        for agent in AGENTS:
            a = make_agent(agent, games.load(spec))
            for name in sorted(dir(a)):
                fn = getattr(a, name)
                if name.startswith("_") or not callable(fn):
                    continue
                out += [_case({"target": "agent", "name": name, "agent": agent}, p.name, v, spec)
                        for p in _params(fn) or [] for v in values]
    return out


# every algorithm of search_ext.agents.ALGORITHMS, with a small budget
AGENTS = ["minimax:iterations=3", "minibal_n:iterations=3", "minibal_plus:iterations=3", "minibal_swing:iterations=3",
          "descent:iterations=3",
          "mcts:iterations=3", "alphabeta:depth=1", "hybrid:depth=1", "predictive:depth=1", "noisy:depth=1",
          "random", "alphadda:iterations=3", "gaussian:depth=1"]


def _search_methods(cls, module, spec):
    import games
    search = _make_search(cls, module, games.load(spec), {})
    for name in sorted(dir(search)):
        fn = getattr(search, name)
        if name.startswith("_") or not callable(fn):
            continue
        params = _params(fn)
        if params:
            yield name, [p.name for p in params]


def _make_search(cls, module, info, kwargs):
    return getattr(importlib.import_module(module), cls)(info, **kwargs)


def _np(value):
    import numpy as np
    kind, text = value
    base, _, exp = text.partition("**")
    x = int(base) ** int(exp) if exp else float(text) if "." in text else int(text)
    return getattr(np, kind)(x)


def _decode(v):
    from tests.fuzz.child import decode
    if isinstance(v, dict) and "$np" in v:
        return _np(v["$np"])
    return decode(v)


def _good(state, fn_name: str, param: str):
    """A good value for ``param`` of ``fn_name`` called on (or about) ``state``."""
    legal = state.legal_actions_list()
    if param in ("action", "sq") and fn_name in ("push", "move_to_str", "is_legal", "transform_action"):
        return legal[0]
    if param == "text" and fn_name == "parse_move":
        return state.move_to_str(legal[0])
    if param == "text" and fn_name == "set_position":
        return state.position()
    if param == "state" or param == "start":
        return state
    if param == "rng_state":
        import numpy as np
        return np.ones(1, np.uint64)
    return GOOD.get(param, 0)


def call(args):
    """Run one case (in the child process)."""
    import games
    spec, slot, value = args["game"], args["slot"], _decode(args["value"])
    info = games.load(spec)
    state = info.new_state()
    target = args["target"]
    if target == "state":
        fn = getattr(state, args["name"])
        kw = {p.name: _good(state, args["name"], p.name) for p in _params(fn) if p.default is p.empty}
        kw[slot] = value
        return fn(**kw)
    if target == "function":
        fn = getattr(importlib.import_module(args["module"]), args["name"])
        key = f"{args['module'].split('.')[-1]}.{args['name']}"
        kw = {}
        for p in _params(fn):
            if p.default is not p.empty and p.name != slot:
                continue
            good = TEXT_GOOD.get(key, {}).get(p.name, _good(state, args["name"], p.name))
            if good == "$planes":
                import numpy as np
                good = np.zeros((3, 3, 2), np.float32)
            kw[p.name] = good
        kw[slot] = value
        return fn(**kw)
    if target == "registry":
        return getattr(games, args["name"])(value)
    if target == "search_init":
        module, kwargs = SEARCHES[args["cls"]]
        return _make_search(args["cls"], module, info, {slot: value})
    if target == "search_method":
        module, _ = SEARCHES[args["cls"]]
        search = _make_search(args["cls"], module, info, {})
        fn = getattr(search, args["name"])
        kw = {}
        for p in _params(fn):
            if p.name == "state" or p.name == "start":
                kw[p.name] = state
            elif p.name in ("iterations", "nodes", "max_depth"):
                kw[p.name] = GOOD[p.name]
            elif p.default is p.empty:
                kw[p.name] = _good(state, args["name"], p.name)
        kw[slot] = value
        if args["name"] in ("best_action", "analyse", "root_info", "subtree_size", "verify") and slot != "state":
            search.search(state, **({"iterations": 2} if args["cls"] in ("BestFirstSearch", "MCTS")
                                    else {"max_depth": 1}))
        return fn(**kw)
    if target == "pool":
        from search_ext.selfplay import SelfPlayPool
        return SelfPlayPool(info, lambda planes: planes, **{**POOL, slot: value})
    if target == "evaluator":
        from search_ext import evaluators
        return getattr(evaluators, args["cls"])(**{slot: value})
    if target == "agent":
        from search_ext.agents import make_agent
        if args["name"] == "make_agent":
            kw = {"text": "random", "game": info}
            kw[slot] = value
            return make_agent(kw["text"], kw["game"])
        agent = make_agent(args["agent"], info)
        fn = getattr(agent, args["name"])
        good = {"state": state, "seed": 0, "values": [0.0, 0.5, 1.0]}
        kw = {p.name: agent.analyse(state) if p.name == "rows" else good.get(p.name, 0)
              for p in _params(fn) if p.default is p.empty}
        kw[slot] = value
        return fn(**kw)
    raise ValueError(f"unknown target {target!r}")


def quick(limit_per_call: int | None = None):
    """In-process run (no child process) for a first look: the cases that raise an undocumented
    class, grouped."""
    from games.errors import GameError
    from tests.fuzz.child import decode  # noqa: F401
    found = {}
    for case in cases():
        a = case["args"]
        try:
            call(a)
        except GameError:
            continue
        except Exception as exc:   # noqa: BLE001
            key = (a["target"], a.get("cls") or a.get("module"), a["name"] if "name" in a else "", a["slot"],
                   type(exc).__name__)
            found.setdefault(key, []).append((a["game"], repr(_decode(a["value"])), str(exc)[:100]))
    return found


if __name__ == "__main__":
    for k, v in sorted(quick().items(), key=str):
        print(k, len(v), v[0])
