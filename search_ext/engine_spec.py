"""The agent notation of an outside engine: ``uci:COMMAND[,key=value...]`` or ``gtp:COMMAND[,...]``.

``COMMAND`` is the engine's program, with its arguments separated by spaces
(``gtp:/usr/games/gnugo --mode gtp``; commas inside parentheses or quotes belong to it, so
``gtp:descent engine breakthrough(rows=6,cols=6)`` works). Then, comma separated:

* a budget per move: ``nodes=N``, ``depth=N`` (UCI), ``movetime=SECONDS`` (``time=`` is the same);
  without one, 1 second per move;
* ``timeout=SECONDS``: how long to wait for an answer beyond the budget (default 30);
* any other ``Name=value``: an engine option, sent as ``setoption name Name value value`` (UCI),
  for example ``Skill Level=0`` or ``UCI_Elo=1500``; GTP engines take no options here.

Parsing is pure (nothing is started); ``descent.make_agent`` builds the agent
(``descent.protocols.outside``), which starts the engine.
"""
from __future__ import annotations

import shlex

from games import validate
from search_ext.agent_base import AgentSpecError

ENGINE_KINDS = ("uci", "gtp")
BUDGET_KEYS = ("nodes", "depth", "movetime", "time", "timeout")


def is_engine_spec(text) -> bool:
    return isinstance(text, str) and text.partition(":")[0].strip() in ENGINE_KINDS


def split_items(text: str) -> list[str]:
    """Split at the commas outside parentheses and quotes (a command may name a game spec such as
    ``breakthrough(rows=6,cols=6)``)."""
    items: list[str] = []
    cur: list[str] = []
    depth = 0
    quote: str | None = None
    for ch in text:
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth = max(0, depth - 1)
        elif ch == "," and depth == 0:
            items.append("".join(cur))
            cur = []
            continue
        cur.append(ch)
    items.append("".join(cur))
    return items


def parse_engine_spec(text: str) -> tuple[str, dict]:
    """``'uci:COMMAND,...'`` -> (``'uci'``, options): ``command`` (list of words), ``options`` (list of
    (name, value) engine options), ``nodes``, ``depth``, ``movetime`` (seconds), ``timeout``."""
    kind, _, rest = text.strip().partition(":")
    kind = kind.strip()
    items = [x.strip() for x in split_items(rest)]
    if not items or not items[0]:
        raise AgentSpecError(f"agent {text!r}: expected {kind}:COMMAND[,key=value...] (the engine's program first)")
    try:
        command = shlex.split(items[0])
    except ValueError as exc:
        raise AgentSpecError(f"agent {text!r}: engine command {items[0]!r}: {exc}") from None
    opts: dict = {"command": command, "options": [], "nodes": None, "depth": None, "movetime": None,
                  "timeout": 30.0, "seed": 0}
    seen = set()
    for item in items[1:]:
        if not item:
            continue
        k, eq, v = item.partition("=")
        k, v = k.strip(), v.strip()
        if not eq or not k or not v:
            raise AgentSpecError(f"agent {text!r}: malformed option {item!r} (expected key=value)")
        if k in seen:
            raise AgentSpecError(f"agent {text!r}: key {k!r} given twice")
        seen.add(k)
        what = f"agent {text!r}: {k}"
        if k in ("nodes", "depth"):
            if kind == "gtp":
                raise AgentSpecError(f"agent {text!r}: GTP has no {k} budget (give time=SECONDS)")
            opts[k] = validate.parse_int(v, what, 1, validate.MAX_COUNT, AgentSpecError)
        elif k in ("movetime", "time"):
            if opts["movetime"] is not None:
                raise AgentSpecError(f"agent {text!r}: give movetime or time (the same), not both")
            opts["movetime"] = validate.parse_real(v, what, 0.0, validate.MAX_SECONDS, AgentSpecError,
                                                   lo_open=True)
        elif k == "timeout":
            opts["timeout"] = validate.parse_real(v, what, 0.0, validate.MAX_SECONDS, AgentSpecError,
                                                  lo_open=True)
        elif kind == "gtp":
            raise AgentSpecError(f"agent {text!r}: unknown key {k!r} for a GTP engine (known: time, "
                                 f"movetime, timeout)")
        else:
            validate.text(k, what, AgentSpecError)
            opts["options"].append((k, v))
    if opts["nodes"] is None and opts["depth"] is None and opts["movetime"] is None:
        opts["movetime"] = 1.0
    return kind, opts


def describe() -> str:
    """The lines ``descent algorithms`` prints about outside engines."""
    return "\n".join([
        "uci: an outside UCI engine, uci:COMMAND[,key=value...] (e.g. uci:/usr/games/fairy-stockfish,Skill Level=0,nodes=1000)",
        "    nodes=N: nodes per move",
        "    depth=N: depth per move",
        "    movetime=1.0 (or time=): seconds per move (the default budget)",
        "    timeout=30.0: seconds to wait for an answer beyond the budget",
        "    Name=value: any other key is an engine option (setoption name Name value value)",
        "gtp: an outside GTP engine, gtp:COMMAND[,time=SECONDS] (e.g. gtp:/path/to/engine --gtp,time=2)",
        "    time=1.0 (or movetime=): seconds per move (time_settings 0 SECONDS 1)",
        "    timeout=30.0: seconds to wait for an answer beyond the budget",
    ])
