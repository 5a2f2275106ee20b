"""One memory cap per member (issue 20, item 3): ``[run] memory_mb`` split among what grows.

A member holds its network (weights, Adam's two moments, the inference copy), the replay window
(``[training] replay_games`` games' examples) and its self-play: ``games_in_flight`` games, each
with a search table and a buffer of tree-learning examples harvested so far. ``selfplay_caps``
gives each game in flight an equal share of what the cap leaves for self-play:

* the network: 4 copies of its parameters (weights, two Adam moments, inference), float32;
* the replay window: ``REPLAY_SHARE`` of the cap (``replay_bytes``), at most ``replay_games``
  games: past its bytes the oldest games leave the window whole (``ReplayBuffer(max_bytes=)``),
  so every game kept has all its examples (chess at 2048 MB: 512 MB, about 60 first-length games
  of 75,000 bit-packed examples, instead of 100); the newest game always stays;
* self-play's value cache (``cache_caps``: at most ``CACHE_SHARE`` of the cap, over all actors);
* the rest, less the pool's batch buffer, split equally among the games in flight, each game's
  share at most half for its table (``max_nodes`` from ``BYTES_PER_STATE``, with room for the
  table's capacity to double; less when the config's own cap is lower) and the rest for its
  examples (``max_example_bytes``: the buffer never holds more, ``Examples.limit`` in the core).
  A finished game's buffer becomes its arrays without a copy (the copy once held a game's
  examples twice: chess at a 256 MB cap, 150 MB more). Not counted here: a finished game on its
  way to the replay window (float32 until ``ReplayBuffer.add`` packs it; the async learner's
  backlog may hold several) and the training pass's minibatches.

Reaching a share degrades self-play instead of growing: a full table decides its move from the tree
built so far (``short_moves``), a full example buffer drops the states past its limit
(``dropped_harvests``, ``dropped_examples``; a compaction's harvest stops at three quarters of the
limit, so the game's end always has room). Too small a cap for even one game's minimum table lowers
``games_in_flight`` (to 1 at least: a cap below one game's minimum is raised to it).
"""
from __future__ import annotations
from search_ext.batcher import DEFAULT_CACHE_STATES
from search_ext.descent_core import BYTES_PER_STATE

REPLAY_SHARE = 0.25            # of the cap, for the replay window
TABLE_HEADROOM = 2             # a table's capacity may double past its states


CACHE_SHARE = 1 / 16           # of the cap, at most, for self-play's value cache
CACHE_MIN_STATES = 1024        # below this a cache is not worth its lookups: none
SLOT_BYTES = 16                # a cache slot: key, value and pending answer (search_ext.valuecache)


def cache_bytes(states: int) -> int:
    """The bytes of a value cache of ``states`` states (two generations of a power-of-two table
    at least twice as large, ``search_ext.valuecache.ValueCache``)."""
    slots = 16
    while slots < 2 * states:
        slots *= 2
    return 2 * slots * SLOT_BYTES


def cache_caps(memory_mb: float, copies: int = 1) -> tuple[int, int]:
    """Self-play's value cache for a member capped at ``memory_mb`` with ``copies`` caches (one
    per actor): (states per cache, bytes of all of them). The batcher's default size
    (``search_ext.batcher.DEFAULT_CACHE_STATES``), halved until all of them fit ``CACHE_SHARE`` of
    the cap; (0, 0) when not even ``CACHE_MIN_STATES`` fit."""
    budget = int(memory_mb * 2 ** 20 * CACHE_SHARE)
    states = DEFAULT_CACHE_STATES
    while states >= CACHE_MIN_STATES and copies * cache_bytes(states) > budget:
        states //= 2
    if states < CACHE_MIN_STATES:
        return 0, 0
    return states, copies * cache_bytes(states)


def network_bytes(model) -> int:
    """Weights, Adam's two moments and the inference copy: 4 float32 copies of the parameters."""
    return 4 * 4 * int(sum(int(w.shape.num_elements()) for w in model.weights))


def replay_bytes(memory_mb: float) -> int:
    """The replay window's share of a member's cap, in bytes."""
    return int(int(memory_mb * 2 ** 20) * REPLAY_SHARE)


def selfplay_caps(info, games_in_flight: int, memory_mb: float, net_bytes: int = 0,
                  max_nodes: int | None = None) -> dict:
    """The pool's ``games_in_flight``, ``max_nodes`` and ``max_example_bytes`` for a member capped
    at ``memory_mb`` megabytes, plus ``game_share_bytes`` (one game's share: its table's and its
    examples' bytes stay below it). ``max_nodes``: the config's own table cap, if any (a table
    needs no more than it; the rest of the share goes to the examples)."""
    h, w, c = info.planes_shape
    enc = h * w * c * 4
    cap = int(memory_mb * 2 ** 20)
    selfplay = cap - replay_bytes(memory_mb) - net_bytes
    min_nodes = 2 * info.branching + 16
    min_game = 2 * TABLE_HEADROOM * min_nodes * BYTES_PER_STATE
    n = max(1, int(games_in_flight))
    while n > 1 and (selfplay - n * info.branching * enc) // n < min_game:
        n -= 1
    share = max(min_game, (selfplay - n * info.branching * enc) // n)
    nodes = share // 2 // (TABLE_HEADROOM * BYTES_PER_STATE)
    max_nodes = max(min_nodes, nodes if max_nodes is None else min(nodes, int(max_nodes)))
    examples = share - max_nodes * TABLE_HEADROOM * BYTES_PER_STATE
    return {"games_in_flight": n, "max_nodes": int(max_nodes),
            "max_example_bytes": int(examples), "game_share_bytes": int(share)}
