"""The runtime options of a training run: how a member's self-play runs, not what it computes, so a
run may change them between reruns (they are not part of ``run.json``).

``RuntimeOptions`` is their one definition: each field's type, default, range or choices and help
text. Everything else is derived from it: the ``[run]`` keys of the config schema
(``descent.config``), the command-line options of ``descent train`` and ``descent pipeline``
(``descent.cli``), ``training.run.runtime_config``, what a member reads from ``MemberJob.extra``
(``RuntimeOptions.from_mapping``) and the table of ``docs/options.md``. A new option is one new
field here (and the code that uses it)::

    python -m descent.options_doc --write        # regenerate docs/options.md
"""
from __future__ import annotations

import dataclasses
import typing
import warnings
from dataclasses import dataclass, field

from games import validate
from games.errors import GameError
from training.inference import BACKENDS, DEVICES

LEARNERS = ("thread", "async", "inline")


class OptionError(GameError):
    """A runtime option of an unknown name's type, out of its range or not one of its choices."""


@dataclass(frozen=True)
class OptionInfo:
    """What a field of an options dataclass declares besides its type and default."""

    help: str
    min: float | None = None
    max: float | None = None
    choices: tuple | None = None
    cli: bool = True             # also a command-line option (``--name-with-dashes``)


def option(default, help: str, **info):
    """A field of an options dataclass: ``default``, one line of ``help``, and ``min``/``max``,
    ``choices`` or ``cli`` (see ``OptionInfo``)."""
    return field(default=default, metadata={"option": OptionInfo(help, **info)})


@dataclass(frozen=True)
class OptionField:
    """One option as every consumer sees it."""

    name: str
    type: type
    default: typing.Any
    info: OptionInfo

    @property
    def help(self) -> str:
        return self.info.help

    @property
    def cli_name(self) -> str:
        return "--" + self.name.replace("_", "-")

    def check(self, value, what: str | None = None, error=OptionError):
        """``value`` if it is of this option's type and in its range or choices, else ``error``
        naming ``what`` (default: the option)."""
        what = what or f"runtime option {self.name!r}"
        if self.type is int:
            value = validate.integer(value, what, self.info.min, self.info.max, error)
        elif self.type is float:
            value = float(validate.real(value, what, self.info.min, self.info.max, error))
        elif self.type is bool:
            if not isinstance(value, bool):
                raise error(f"{what} must be true or false, got {value!r}")
        else:
            value = validate.text(value, what, error, empty=self.info.choices is None)
        if self.info.choices is not None and value not in self.info.choices:
            raise error(f"{what} must be one of {', '.join(map(str, self.info.choices))}, "
                        f"got {value!r}")
        return value


def option_fields(cls) -> list[OptionField]:
    """The fields of an options dataclass, in their order."""
    hints = typing.get_type_hints(cls)
    return [OptionField(f.name, hints[f.name], f.default, f.metadata["option"])
            for f in dataclasses.fields(cls)]


@dataclass(frozen=True)
class RuntimeOptions:
    """How a member's self-play runs (the config's ``[run]`` section, the command line, or
    ``MemberJob.extra``)."""

    games_in_flight: int = option(
        0, "self-play games kept going per worker, their expansions evaluated in one batch "
           "(0: auto, from the branching factor)", min=0, max=4096)
    actors: int = option(
        0, "self-play processes per member, all feeding its one learner: 1 plays inside the "
           "member's process; K >= 2 runs K actor processes (Ray actors with --ray) with the "
           "network the learner publishes; 0: auto, the spare cores of a lone member, else 1 "
           "(docs/training.md, \"Actors\")", min=0, max=1000)
    inference: str = option(
        "auto", "network backend inside self-play: onnx (ONNX Runtime), numpy, tf (tf.function); "
                "auto: tf on a GPU, else onnx if installed, else numpy", choices=BACKENDS)
    device: str = option(
        "auto", "training and inference device: auto (a GPU when TensorFlow sees one), cpu or gpu",
        choices=DEVICES)
    learner: str = option(
        "async", "training passes in a thread beside self-play, one per game, self-play waiting "
                 "when the learner is behind (thread); in a thread self-play never waits for, one "
                 "pass per backlog of games (async); or between games (inline)", choices=LEARNERS)
    memory_mb: float = option(
        2048.0, "memory cap of a member in megabytes: self-play tables and examples of all games "
                "in flight, replay window and network (training.memory); reaching it degrades "
                "search, never grows past it", min=16.0, max=1e7)
    progress_seconds: float = option(
        20.0, "seconds between a member's progress lines (games in flight, plies, iterations "
              "per second, table size, memory, ETA; also status.json and TensorBoard)",
        min=1.0, max=3600.0)
    engine: str = option(
        "pool", "self-play engine: the batched self-play pool (legacy, the one-game path it "
                "replaced, is deprecated: accepted with a warning, it means pool)",
        choices=("pool", "legacy"), cli=False)
    min_milestone_games: int = option(
        10, "a milestone checkpoint written after fewer self-play games than this is flagged "
            "undertrained in its JSON; rank and the report warn about it or leave it out",
        min=0, max=10 ** 9)
    log_max_mb: float = option(
        64.0, "disk cap of a member's logs in megabytes, half each: log.jsonl with its gzip "
              "archives (older games thinned to every 2nd, 4th... game as they fill up) and the "
              "TensorBoard event files (the oldest deleted); see training.logfiles",
        min=0.001, max=1e6)
    sync_every: float = option(
        600.0, "with --ray-ship (no shared file system): seconds between the copies of a member's "
               "state (weights, optimizer, counters, log, milestones) from its worker to the run "
               "directory, also sent at every milestone and at the end; a member restarted on "
               "another node loses at most this much (0: after every game)", min=0.0, max=1e7)

    def __post_init__(self):
        for f in option_fields(type(self)):
            object.__setattr__(self, f.name, f.check(getattr(self, f.name)))
        if self.engine == "legacy":
            warnings.warn("runtime option engine = 'legacy' is deprecated: the one-game path is "
                          "gone and self-play uses the pool", FutureWarning, stacklevel=3)
            object.__setattr__(self, "engine", "pool")

    @classmethod
    def from_mapping(cls, values: dict, error=OptionError):
        """The options set in ``values`` (other keys are ignored: ``MemberJob.extra`` may carry
        more), the defaults for the rest; a bad value is ``error`` naming the option."""
        out = {}
        for f in option_fields(cls):
            if f.name in values:
                out[f.name] = f.check(values[f.name], error=error)
        return cls(**out)

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)
