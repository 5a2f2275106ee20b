"""Calibrating a balanced player: the search budget at which its gain (or score) against an
opponent reaches a target (``descent calibrate``).

The Minibal paper (section 5.1) observes that against a weaker opponent the mean binary gain of
Unbounded Minibal_+ grows monotonically with its search budget until it reaches zero (and above it
for much weaker opponents). The budget that gives a target gain is the root of a noisy monotone
curve. Near the root the curve is steep in the budget (against Fairy-Stockfish on breakthrough 6x6,
+0 at 4 iterations and about +20 at 5), so a design that accepts the first budget whose noisy
interval holds the target lands anywhere on that slope. This one fits the curve to every game played
so far and asks the fit where the root is:

* **The model.** With ``u = (y + 1) / 2`` in [0, 1] (``y`` the game's gain or score, the balanced
  player's view), ``E[u] = sigmoid(slope * (ln b - root) + c)`` where ``c = logit((target + 1) / 2)``,
  so that the gain at ``b = exp(root)`` is the target: a logistic curve in log-budget, increasing
  (``slope > 0``). Its posterior is computed on a grid: ``root`` uniform over the range widened by a
  factor ``e`` at each end (mass beyond an end says the target lies outside the range), ``slope``
  log-uniform over 0.1 .. 8. The likelihood is the binomial one on ``u`` (a quasi-likelihood when
  draws give ``u = 1/2``), divided by the dispersion estimated at the best fit (at most 1: draws make
  results less variable than wins and losses), so that games with many draws are not under-counted.
* **Rounds.** The design plays rounds of games, all of a round at once (batched: ``descent.batched``
  plays them in one process with one network call per round of searches). Round r has
  ``min(round_games, 2^(r+1))`` games in seat pairs that share a seeded random opening; pair i is
  played at the budget nearest to the ``(i + 1/2) / m`` quantile of the root's posterior (shifted by
  the golden ratio from round to round), so the games go where the root may be, spread as widely as
  the posterior still is, and concentrate on the few budgets around it as it narrows.
* **The answer** is the budget (an integer number of iterations, or seconds to 3 significant digits)
  whose posterior mean gain is nearest the target; its interval is the 95% interval of the fitted
  gain there. **Stops:** converged when that interval's half-width is at most ``precision`` and
  ``near_games`` games were played in the answer's neighbourhood (the budgets of the root's 95%
  interval, and the answer: ``near_games``); refused as unreachable when the answer is an end of the
  range and the whole interval there lies on the wrong side of the target (below at the largest
  budget: the opponent is too strong; above at the smallest: too weak); or ``max_games`` spent (the
  current answer, marked not converged).

Every game plays from a seeded random opening of ``opening_plies`` plies, the same for both seats of
a pair and different for every pair and budget (so no two pairs replay the same game).

Persistence: every finished game is appended (and fsynced) to a per-game log,
``<run>/calibrations/<name>.games.jsonl``, keyed by (budget, k) where k counts the games at that
budget; the design is a pure function of that log (games at a budget are consumed in k order), so a
rerun after a kill replays it and continues with the missing games of its round, never repeating
one. With iteration budgets every game is reproducible from its seed. The result is one JSON file,
``<run>/calibrations/<name>.json``, written to a temporary name and renamed.

The package, one concern a module: ``design`` (settings, the fit, the rounds, the stops, the
result: no games, no files), ``log`` (the files: game log, lock, names), ``players`` (the games),
``results`` (reading results back: ``describe``, ``find_calibration``, ``side_by_side``); this
module runs a calibration (``calibrate``): it plays the design's rounds with the players and logs
every game.
"""
from __future__ import annotations

import time
from pathlib import Path

from training import fileio, layout
from training.fileio import crash_point
from descent import distributed
from descent.calibrate.design import (
    DESIGN, CalibrationError, Fit, Settings, Tally, Unreachable, budget_text, check_range, check_settings,
    near_games, result, round_budgets, round_keys, round_step, snap, stop, unreachable, fmt_metric)
from descent.calibrate.log import aborted_log, append_log, files, lock_log, names, read_log
from descent.calibrate.players import Players
from descent.calibrate.results import describe, find_calibration, side_by_side
from descent.match import play_task

__all__ = ["DESIGN", "CalibrationError", "Fit", "Players", "Settings", "Unreachable", "budget_text",
           "calibrate", "check_range", "describe", "find_calibration", "lock_log", "names",
           "near_games", "read_log", "round_budgets", "side_by_side", "snap"]


def calibrate(s: Settings, run_dir, echo=None, progress: bool = False, stop_after: int | None = None,
              players=None, ray_address: str | None = None) -> dict:
    """Run (or resume) a calibration; returns the result dict (also written to the run).

    Raises ``Unreachable`` (with the result saved) when no budget in range reaches the target.
    ``stop_after`` plays at most that many new games in this call (returns ``None`` if unfinished):
    for tests of resumption. ``players`` replaces the game player (anything with
    ``play(budget, k) -> record``, or ``run(keys)`` yielding records), to study the design on a
    known curve.

    The games of a round are played at once: batched in this process (``Players.run``), or with
    ``ray_address`` as Ray tasks (``descent.match.play_task``). The driver appends each to the log as
    it returns, and the design consumes a round's games in (budget, k) order once all are there, so
    the answer is the serial one (with iteration budgets)."""
    check_settings(s)
    run_dir = Path(run_dir)
    own = players is None
    players = players or Players(s, run_dir)
    try:
        out_dir = layout.calibrations_dir(run_dir)
        fileio.check_writable_dir(out_dir, CalibrationError, "calibration folder")   # before any game
        res_path, log_path = files(run_dir, s)
        if ray_address is not None:

            def play(keys):
                tasks = [players.task(b, k) for b, k in keys]
                for task, rec in distributed.run_tasks_ray(tasks, ray_address, play_task):
                    yield players.record(task, rec, rec.seconds_a + rec.seconds_b)
        elif hasattr(players, "run"):
            play = players.run
        else:
            def play(keys):
                for b, k in keys:
                    yield players.play(b, k)
        with lock_log(log_path):
            # temporary files of this calibration's log and result (no one else writes them while we
            # hold the lock), and of writers that are dead; never a live calibration's
            fileio.clean_temp_files(out_dir, scope={res_path.name, log_path.name})
            return _calibrate(s, play, log_path, res_path, echo, progress, stop_after)
    finally:
        if own:
            players.close()


def _calibrate(s, play, log_path, res_path, echo, progress, stop_after):
    """The design's rounds, played and logged: each round's games that the log lacks are played
    (and appended as they finish), then the round is consumed in (budget, k) order and the curve
    refitted. Returns the result (None when ``stop_after`` games were played inside a round)."""
    log = read_log(log_path)
    tally = Tally(s.metric)
    steps: list = []
    new = 0
    t0 = time.perf_counter()
    fit = Fit(s, tally.data)
    answer = fit.answer()
    status, converged, r = None, True, 0
    while True:
        if r > 0:
            status, converged = stop(s, fit, answer, tally)
            if status:
                break
        pairs, keys = round_keys(s, fit, r, tally)
        todo = [x for x in keys if x not in log]
        if stop_after is not None:
            todo = todo[:max(0, stop_after - new)]
        aborted = []
        for rec in play(todo):
            if rec.get("aborted"):        # an outside engine failed: never into the design
                append_log(aborted_log(log_path), rec)
                aborted.append(rec)
                continue
            append_log(log_path, rec)
            crash_point("calibrate_logged")
            log[(rec["budget"], rec["k"])] = rec
            new += 1
            if echo and progress:
                echo(f"  game {new}: {budget_text(s.unit, rec['budget'])} k={rec['k']} -> {rec['result']:+d}")
        if aborted:
            rec = aborted[0]
            raise CalibrationError(f"game k={rec['k']} at {budget_text(s.unit, rec['budget'])} was aborted, "
                                   f"not scored ({rec['aborted']}); rerun to play it again")
        if any(x not in log for x in keys):
            return None                   # stop_after reached inside the round
        for b, k in keys:
            tally.add(b, log[(b, k)])
        fit = Fit(s, tally.data)
        r += 1
        step = round_step(s, fit, r, pairs, tally)
        answer = step["answer"]
        fg = fit.gain(answer)
        steps.append(step)
        if echo:
            echo(f"  round {r}: {len(keys)} game(s) at {', '.join(f'{b} x{n}' for b, n in step['games'].items())} "
                 f"{s.unit}; {tally.spent} spent; answer {budget_text(s.unit, answer)}, fitted {s.metric} "
                 f"{fmt_metric(s.metric, fg[0])} [{fmt_metric(s.metric, fg[1])}, {fmt_metric(s.metric, fg[2])}]")
    res = result(s, fit, answer, tally, status, converged, steps)
    res.update({"games_played_this_call": new, "seconds_this_call": time.perf_counter() - t0,
                "log": str(log_path)})
    fileio.write_json(res_path, res)
    if status in ("too_strong", "too_weak"):
        raise unreachable(s, fit, answer, status, tally.spent, res)
    return res
