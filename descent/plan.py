"""The training plan: what a population's training is, built and checked once for every driver.

``descent train``, ``descent pipeline`` and ``descent experiment`` each describe a training (a game,
a config, a budget, milestones, a population, a run directory, Ray) and hand it to ``build_plan``,
which loads the config the same way for all three and applies one rule (docs/training.md,
"The training plan"):

* the config: ``--config`` (or an experiment's ``[[games]] config``), else ``configs/<game>.toml``;
  one written for another game is refused, one for the same game with other parameters is used
  with a warning; without an explicit config, a run that exists continues with the settings it
  was started with (``training.run.recorded_config``, a note);
* the budget and milestones: those given, else the config's ``[run]`` ones; every milestone lies
  within the budget (a milestone past it would never be written); a driver that ranks the run
  afterwards (pipeline, experiment) needs two, an early and a final one; the budget's floor of
  finished games (``min_games``) likewise, a budget being its time *and* its floor, whichever
  comes later (``training.trainer.milestone_floor``);
* the population and workers: those given, else the config's; never more workers than members;
* Ray: the address given, else the config's ``[run] ray``; ``ray_ship`` (``ray_ship_replay``)
  trains each member in a scratch directory of its worker, synced back every ``sync_every``
  seconds, for every driver alike.

A bad plan is one ``PlanError`` line (``training plan: ...``), before anything is written; every
driver prints it as it is.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import games
from training import layout
from training.actors import resolve_actors
from training.run import default_run_dir, record_milestones, recorded_config, run_training, runtime_config
from descent.config import (ConfigError, check_config_game, default_config, default_config_path, load_config,
                            parse_duration, parse_durations)
from descent.distributed import ray_runner


class PlanError(ConfigError):
    """A training plan that cannot run (a bad budget or milestone, a milestone past the budget,
    one milestone where a ranked run needs two)."""


@dataclass(frozen=True)
class TrainingPlan:
    """A checked training plan (``build_plan``); ``run()`` trains it (resumable)."""

    game: str                              # the game spec, canonical
    cfg: dict                              # the loaded config, runtime options applied
    config_path: Path
    population: int
    budget: float                          # seconds of training of each member
    budget_text: str                       # as given, e.g. '2m'
    milestones: tuple                      # ((name, seconds), ...) sorted by time
    workers: int
    seed: int
    run_dir: Path
    max_games: int = 0                     # games of each member in this call (0: to the budget)
    ray: str | None = None                 # Ray address, or None for local worker processes
    ray_ship: bool = False
    ray_ship_replay: bool = False
    notes: tuple = field(default=())       # warnings for stderr (another game's parameters, ...)
    min_games: int = 0                     # the budget's floor of finished games of each member

    @property
    def milestone_names(self) -> list[str]:
        return [n for n, _ in self.milestones]

    @property
    def actors(self) -> tuple[int, str | None]:
        """(self-play actors of each member, a note when they were chosen automatically):
        ``training.actors.resolve_actors``."""
        return resolve_actors(self.cfg["run"]["actors"], self.population, self.ray is not None)

    @property
    def threads(self) -> int:
        return self.cfg["run"]["threads"]

    def trained(self) -> bool:
        """Whether every member has written every milestone (nothing left to train)."""
        return layout.is_run(self.run_dir) and layout.trained(self.run_dir, self.population,
                                                              self.milestone_names)

    def remote(self):
        """The members' runner on Ray (``descent.distributed.ray_runner``), or None."""
        if self.ray is None:
            return None
        return ray_runner(self.ray, self.ray_ship, self.ray_ship_replay)

    def run(self, progress: bool = True, echo=print) -> list[dict]:
        """Train (or continue) every member; returns their counters (``run_training``)."""
        self.run_dir.mkdir(parents=True, exist_ok=True)
        return run_training(self.game, self.cfg, self.population, self.budget, list(self.milestones),
                            self.workers, self.run_dir, self.seed, threads=self.threads,
                            progress=progress, max_games=self.max_games, echo=echo,
                            remote=self.remote(), runtime=runtime_config(self.cfg),
                            min_games=self.min_games)

    def record_milestones(self) -> bool:
        """Record this plan's milestones and budget in the run's ``run.json``, where rank reads the
        early and final checkpoints (``training.run.record_milestones``; unchanged when the run was
        trained further before). Returns whether it changed."""
        return record_milestones(self.run_dir, self.milestones, self.budget)


def check_schedule(budget: str, milestones: str, ranked: bool = False) -> tuple[float, list]:
    """(budget seconds, [(milestone, seconds)]) of a budget and milestone list, by the plan's
    rule: every milestone within the budget; two or more when ``ranked``. ``PlanError``."""
    try:
        budget_s, ms = parse_duration(budget), parse_durations(milestones)
    except ConfigError as exc:
        raise PlanError(f"training plan: {exc}") from None
    late = [n for n, s in ms if s > budget_s]
    if late:
        raise PlanError(f"training plan: milestone(s) {', '.join(late)} lie beyond the budget {budget}")
    if ranked and len(ms) < 2:
        raise PlanError(f"training plan: milestones {milestones!r}: a ranked run needs two, an early "
                        f"and a final checkpoint")
    return budget_s, ms


def build_plan(game: str, *, config: str | Path | None = None, population: int | None = None,
               budget: str | None = None, milestones: str | None = None, workers: int | None = None,
               seed: int = 0, out: str | Path | None = None, max_games: int = 0,
               ray: str | None = None, ray_ship: bool = False, ray_ship_replay: bool = False,
               runtime: dict | None = None, ranked: bool = False,
               min_games: int | None = None) -> TrainingPlan:
    """The checked plan of a training (the module's rule); ``runtime``: runtime options given on
    the command line (None values are not given), set over the config's ``[run]`` keys;
    ``min_games``: the budget's floor of finished games of each member (None: the config's)."""
    info = games.load(game)
    spec = info.spec
    cfg_path = Path(config) if config is not None else default_config_path(spec)
    if config is None and info.definition.game_class is not None and not cfg_path.exists():
        # a game written in Python without a config file: the schema's defaults
        cfg, cfg_path = default_config(spec), Path("(defaults)")
        notes = [f"note: no config file for {spec}: the default settings (docs/options.md; --config FILE "
                 f"to change them)"]
    else:
        cfg = load_config(cfg_path)
        notes = list(check_config_game(cfg, cfg_path, spec))
    cfg["run"].update({k: v for k, v in (runtime or {}).items() if v is not None})
    run_cfg = cfg["run"]
    budget_text = budget if budget is not None else run_cfg["budget"]
    budget_s, ms = check_schedule(budget_text, milestones if milestones is not None
                                  else run_cfg["milestones"], ranked)
    population = population or run_cfg["population"]
    run_dir = Path(out) if out is not None else default_run_dir(spec)
    if config is None:
        note = recorded_config(run_dir, cfg, spec, seed)
        if note:
            notes.append(note)
    return TrainingPlan(spec, cfg, cfg_path, population, budget_s, budget_text, tuple(ms),
                        min(workers or run_cfg["workers"], population), seed, run_dir,
                        max_games=max_games, ray=ray or run_cfg["ray"] or None, ray_ship=ray_ship,
                        ray_ship_replay=ray_ship_replay, notes=tuple(notes),
                        min_games=run_cfg["min_games"] if min_games is None else min_games)
