import pytest

from descent.config import ConfigError, all_configs, load_config
from descent.config import CONFIG_DIR, SCHEMA, default_config_path


def test_every_shipped_config_loads():
    configs = all_configs()
    assert {p.stem for p, _ in configs} >= {"tic_tac_toe", "reversi", "breakthrough",
                                            "outer_open_gomoku", "connect6"}
    for path, cfg in configs:
        assert cfg["game"]["spec"].startswith(path.stem)


@pytest.mark.parametrize("text, fragment", [
    ('[game]\nspec = "tic_tac_toe"\n[tour]\nperft_dept = 3\n', "unknown key 'tour.perft_dept'"),
    ('[game]\nspec = "tic_tac_toe"\n[turo]\n', r"unknown section \[turo\]"),
    ('[game]\nspec = "tic_tac_toe"\n[tour]\nperft_depth = "3"\n', "'tour.perft_depth' must be int"),
    ('[game]\nspec = "tic_tac_toe"\n[tour]\nperft_depth = 0\n', r"out of range \[1, 64\]"),
    ('[tour]\nperft_depth = 2\n', "missing key 'game.spec'"),
    ('[game]\nspec = "reversi(size=5)"\n', "game.spec: reversi: size=5 is not allowed"),
    ('[game\nspec = 1', "not valid TOML"),
    ('[game]\nspec = "tic_tac_toe"\n[selfplay]\nexploration_floor = 0.5\nexploration_ceiling = 0.4\n',
     r"'selfplay.exploration_ceiling' \(0.4\) is below 'selfplay.exploration_floor' \(0.5\)"),
])
def test_bad_configs_name_file_and_key(tmp_path, text, fragment):
    p = tmp_path / "bad.toml"
    p.write_text(text)
    with pytest.raises(ConfigError, match=fragment) as err:
        load_config(p)
    assert str(p) in str(err.value)


def test_missing_config(tmp_path):
    with pytest.raises(ConfigError, match="config file not found"):
        load_config(tmp_path / "nope.toml")


def test_config_dir_is_the_repository_one():
    assert (CONFIG_DIR / "reversi.toml").exists()


# ---- runtime options: one definition (training.options.RuntimeOptions) ---------------------------

def _more_options():
    """RuntimeOptions with one more field, as a new option would be added."""
    from dataclasses import dataclass
    from training.options import RuntimeOptions, option

    @dataclass(frozen=True)
    class More(RuntimeOptions):
        replay_threads: int = option(3, "a test-only knob", min=1, max=9)
    return More


def _command_with(options_class):
    import click
    from descent.cli import click_options

    @click.command()
    @click_options(options_class)
    def cmd(**given):
        click.echo(repr(sorted((k, v) for k, v in given.items() if v is not None)))
    return cmd


def test_a_new_runtime_field_reaches_schema_cli_run_config_and_docs(tmp_path, monkeypatch):
    """One field added to the dataclass: a config key (typed, ranged, defaulted), a command-line
    option (typed, ranged, helped), a key of runtime_config and a row of the docs table."""
    import descent.config as config
    import training.options
    from click.testing import CliRunner
    from descent.options_doc import markdown
    from training.run import runtime_config
    More = _more_options()
    schema = config.build_schema(More)
    key = schema["run"]["replay_threads"]
    assert (key.type, key.default, key.min, key.max, key.help) == (int, 3, 1, 9, "a test-only knob")
    assert "replay_threads" not in config.SCHEMA["run"]
    monkeypatch.setattr(config, "SCHEMA", schema)
    p = tmp_path / "c.toml"
    p.write_text('[game]\nspec = "tic_tac_toe"\n[run]\nreplay_threads = 5\n')
    assert load_config(p)["run"]["replay_threads"] == 5
    p.write_text('[game]\nspec = "tic_tac_toe"\n')
    cfg = load_config(p)
    assert cfg["run"]["replay_threads"] == 3
    p.write_text('[game]\nspec = "tic_tac_toe"\n[run]\nreplay_threads = 0\n')
    with pytest.raises(ConfigError, match=r"'run.replay_threads': 0 is out of range \[1, 9\]"):
        load_config(p)
    monkeypatch.setattr(training.options, "RuntimeOptions", More)
    assert runtime_config(cfg)["replay_threads"] == 3
    assert runtime_config({"run": {"replay_threads": 7}}) == {"replay_threads": 7}
    cmd = _command_with(More)
    r = CliRunner().invoke(cmd, ["--replay-threads", "5", "--learner", "inline"])
    assert r.exit_code == 0 and r.output.strip() == "[('learner', 'inline'), ('replay_threads', 5)]"
    r = CliRunner().invoke(cmd, ["--replay-threads", "0"])
    assert r.exit_code == 2 and "--replay-threads" in r.output
    r = CliRunner().invoke(cmd, ["--help"])
    assert "--replay-threads" in r.output and "A test-only knob" in r.output
    assert "--engine" not in r.output                  # a field with cli=False
    doc = markdown(schema, cmd, More)
    assert ("| `replay_threads` *runtime* | int | `3` | 1 to 9 | `--replay-threads` | "
            "a test-only knob |") in doc


def test_runtime_options_come_from_the_dataclass():
    """Today's runtime keys: the [run] schema entries, the options of `descent train` and
    `descent pipeline` and MemberJob.extra's reading are all the dataclass's."""
    from descent.cli import pipeline, train
    from descent.config import SCHEMA
    from training.options import OptionError, RuntimeOptions, option_fields
    fields = option_fields(RuntimeOptions)
    assert [f.name for f in fields] == ["games_in_flight", "actors", "inference", "device", "learner",
                                        "memory_mb", "progress_seconds", "engine",
                                        "min_milestone_games", "log_max_mb", "sync_every"]
    for f in fields:
        key = SCHEMA["run"][f.name]
        assert (key.type, key.default, key.help, key.min, key.max, key.choices) == \
            (f.type, f.default, f.help, f.info.min, f.info.max, f.info.choices)
        for command in (train, pipeline):
            opts = {o: p for p in command.params for o in p.opts}
            if not f.info.cli:
                assert f.cli_name not in opts
                continue
            param = opts[f.cli_name]
            assert param.name == f.name and param.default is None and f.help[1:] in param.help
            if f.info.choices:
                assert tuple(param.type.choices) == f.info.choices
    assert RuntimeOptions.from_mapping({"games_in_flight": 3, "other": 1}).games_in_flight == 3
    with pytest.raises(OptionError, match="'learner' must be one of thread, async, inline"):
        RuntimeOptions.from_mapping({"learner": "later"})
    with pytest.raises(OptionError, match="'games_in_flight': must be an integer, got True"):
        RuntimeOptions.from_mapping({"games_in_flight": True})


def test_engine_legacy_still_loads_and_means_the_pool(tmp_path):
    from training.options import RuntimeOptions
    from training.run import runtime_config
    p = tmp_path / "old.toml"
    p.write_text('[game]\nspec = "tic_tac_toe"\n[run]\nengine = "legacy"\n')
    cfg = load_config(p)
    with pytest.warns(FutureWarning, match="engine = 'legacy' is deprecated"):
        opts = RuntimeOptions.from_mapping(runtime_config(cfg))
    assert opts.engine == "pool"


def test_options_doc_is_up_to_date():
    """docs/options.md is generated (python -m descent.options_doc --write) from the schema and
    the dataclass: it must equal what the code says now."""
    from descent.options_doc import DOC, markdown
    assert DOC.read_text() == markdown(), \
        "docs/options.md is out of date: run python -m descent.options_doc --write"


def test_network_keys_come_from_the_architecture(tmp_path):
    """Every Architecture field is a [network] key (default, range, choices from the one
    description), and a bad value is one ConfigError naming the key."""
    from dataclasses import fields

    from training.architecture import Architecture, field_checks
    net = SCHEMA["network"]
    assert list(net) == [f.name for f in fields(Architecture)]
    for f in fields(Architecture):
        assert net[f.name].default == f.default
        assert net[f.name].min == getattr(field_checks()[f.name], "lo", None)
    cfg = tmp_path / "c.toml"
    cfg.write_text('[game]\nspec = "tic_tac_toe"\n[network]\nkernel = 5\nactivation = "tanh"\n')
    loaded = load_config(cfg)
    assert Architecture.from_meta(loaded["network"]) == Architecture(kernel=5, activation="tanh")
    cfg.write_text('[game]\nspec = "tic_tac_toe"\n[network]\nhead_kernel = 0\n')
    with pytest.raises(ConfigError, match="network.head_kernel"):
        load_config(cfg)


def test_a_run_started_before_the_new_network_keys_continues(tmp_path):
    """run.json written before kernel/head_kernel/head_filters/activation existed: a rerun with
    their defaults is the same configuration; with another kernel it is refused."""
    _recorded_before(tmp_path, lambda old: old.update(
        network={k: old["network"][k] for k in ("filters", "blocks", "head_units")}), "network", "kernel", 5)


def _recorded_before(tmp_path, drop, section, key, other_value):
    """A run.json whose config ``drop`` took the later keys out of continues with their defaults,
    and is refused with ``section.key`` set to ``other_value``."""
    import json

    from training.run import RunError, check_run, training_config
    cfg = training_config(load_config(default_config_path("tic_tac_toe")))
    old = json.loads(json.dumps(cfg))
    drop(old)
    (tmp_path / "run.json").write_text(json.dumps(
        {"game": "tic_tac_toe", "config": old, "seed": 0, "format": "descent-run-1"}))
    check_run(tmp_path, "tic_tac_toe", cfg, 0)
    other = json.loads(json.dumps(cfg))
    other[section][key] = other_value
    with pytest.raises(RunError, match="another configuration"):
        check_run(tmp_path, "tic_tac_toe", other, 0)


def test_the_exploration_ceiling_bounds_e_and_a_run_recorded_before_it_continues(tmp_path):
    from training.progress import exploration
    sp = {"exploration_floor": 0.05, "exploration_ceiling": 1.0}
    assert [exploration(sp, t, 100.0) for t in (0.0, 30.0, 100.0, 250.0)] == [0.05, 0.3, 1.0, 1.0]
    sp["exploration_ceiling"] = 0.8
    assert [exploration(sp, t, 100.0) for t in (0.0, 30.0, 90.0)] == [0.05, 0.3, 0.8]
    assert load_config(default_config_path("tic_tac_toe"))["selfplay"]["exploration_ceiling"] == 1.0
    _recorded_before(tmp_path, lambda old: old["selfplay"].pop("exploration_ceiling"),
                     "selfplay", "exploration_ceiling", 0.8)


def test_a_rerun_without_config_continues_with_the_recorded_settings(tmp_path):
    """The default config changed since a run started (issue 20's long-game defaults): a rerun
    without --config takes the run's recorded settings, says so in one line, and check_run accepts
    it; another seed or game, or the same settings, leave the config alone."""
    import json

    from training.run import check_run, recorded_config, training_config
    cfg = load_config(default_config_path("chess"))
    old = json.loads(json.dumps(training_config(cfg)))
    old["selfplay"]["iterations"] = 50
    del old["network"]["kernel"]               # written before the key existed
    (tmp_path / "run.json").write_text(json.dumps(
        {"game": "chess", "config": old, "seed": 3, "format": "descent-run-1"}))
    assert recorded_config(tmp_path, load_config(default_config_path("chess")), "chess", 4) is None
    assert recorded_config(tmp_path, load_config(default_config_path("chess")), "xiangqi", 3) is None
    note = recorded_config(tmp_path, cfg, "chess", 3)
    assert note.startswith("note: ") and "selfplay.iterations" in note and "\n" not in note
    assert cfg["selfplay"]["iterations"] == 50 and cfg["network"]["kernel"] == 3
    check_run(tmp_path, "chess", training_config(cfg), 3)
    assert recorded_config(tmp_path, cfg, "chess", 3) is None       # now the same settings
    assert recorded_config(tmp_path / "none", cfg, "chess", 3) is None


def test_shipped_configs_explain_themselves_without_issue_numbers():
    """A shipped config's notes say why a value was chosen; an issue number tells a user nothing."""
    import re
    for path in sorted(CONFIG_DIR.rglob("*.toml")):
        for n, line in enumerate(path.read_text().splitlines(), 1):
            assert not re.search(r"\bissues? #?\d+", line, re.I), f"{path}:{n}: {line}"


def test_shipped_experiment_files_load_and_restore_from_committed_exports():
    """Every experiment file loads, and each `[[games]] from` names an exported run in the
    repository (run.json there), so the file is one command on a clean clone."""
    from descent.experiment import load_experiment
    from training import layout
    root = CONFIG_DIR.parent
    files = sorted((CONFIG_DIR / "experiments").glob("*.toml"))
    files = [p for p in files if "[experiment]" in p.read_text() or "\nextends = " in p.read_text()]
    assert [p.name for p in files if "extends" in p.read_text()]         # the variants load too
    assert files
    for path in files:
        exp = load_experiment(path)
        for g in exp["games"]:
            if g.get("from"):
                assert layout.is_run(root / g["from"]), f"{path.name}: {g['spec']}: {g['from']}"


_BASE_EXPERIMENT = """
[experiment]
name = "base"
runs = "runs/base"
[train]
population = 4
budget = "2s"
milestones = "1s,2s"
[rank]
agent = "minimax:iterations=10,decision=safe"
[evaluate]
algorithms = ["minimax", "minibal_plus"]
budgets = ["iterations=3", "iterations=30"]
[[opponents]]
kind = "pool"
budget = "iterations=10"
[[opponents]]
kind = "mcts"
budget = "iterations=100"
[[games]]
spec = "tic_tac_toe"
[[games]]
spec = "breakthrough"
"""


def test_an_experiment_variant_is_its_differences(tmp_path):
    """``extends``: a section overrides the base's key by key, an array of tables replaces the
    base's whole array, defaults fill what neither gives, and a chain of files resolves in order
    (paths relative to the extending file)."""
    from descent.experiment import load_experiment
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "base.toml").write_text(_BASE_EXPERIMENT)
    (tmp_path / "variant.toml").write_text('extends = "sub/base.toml"\n[experiment]\nname = "variant"\n'
                                           '[evaluate]\nbudgets = ["iterations=7"]\n'
                                           '[[games]]\nspec = "tic_tac_toe"\nhigh = [1]\nlow = [0]\n'
                                           'split_source = "given"\n')
    base, exp = load_experiment(tmp_path / "sub" / "base.toml"), load_experiment(tmp_path / "variant.toml")
    assert exp["experiment"] == {**base["experiment"], "name": "variant"}
    assert exp["experiment"]["runs"] == "runs/base" and exp["experiment"]["workers"] == 1
    assert exp["evaluate"] == {**base["evaluate"], "budgets": ["iterations=7"]}
    assert exp["evaluate"]["algorithms"] == ["minimax", "minibal_plus"]
    assert exp["opponents"] == base["opponents"] and len(exp["opponents"]) == 2
    assert exp["games"] == [{"spec": "tic_tac_toe", "high": [1], "low": [0], "split_source": "given"}]
    (tmp_path / "sub" / "third.toml").write_text('extends = "../variant.toml"\n'
                                                 '[[opponents]]\nkind = "pool"\nbudget = "iterations=5"\n')
    third = load_experiment(tmp_path / "sub" / "third.toml")
    assert third["opponents"] == [{"kind": "pool", "budget": "iterations=5"}]
    assert third["evaluate"]["budgets"] == ["iterations=7"] and third["experiment"]["name"] == "variant"
    assert third["games"] == exp["games"]


@pytest.mark.parametrize("text, fragment", [
    ('extends = "nowhere.toml"\n', "variant.toml: extends 'nowhere.toml': no such file"),
    ('extends = 3\n', "variant.toml: 'extends' must be the path of another experiment file, got 3"),
    ('extends = "variant.toml"\n', "'extends' goes round in a circle (variant.toml -> variant.toml)"),
    ('extends = "base.toml"\n[rank]\nplies = 3\n', "variant.toml: unknown key 'rank.plies'"),
    ('extends = "bad_base.toml"\n', "bad_base.toml: unknown section [turo]"),
    ('extends = "loop_a.toml"\n', "goes round in a circle (variant.toml -> loop_a.toml -> loop_b.toml -> loop_a.toml)"),
])
def test_a_bad_variant_is_one_line_naming_the_file(tmp_path, text, fragment):
    from descent.experiment import ExperimentError, load_experiment
    (tmp_path / "base.toml").write_text(_BASE_EXPERIMENT)
    (tmp_path / "bad_base.toml").write_text(_BASE_EXPERIMENT + "[turo]\nx = 1\n")
    (tmp_path / "loop_a.toml").write_text('extends = "loop_b.toml"\n')
    (tmp_path / "loop_b.toml").write_text('extends = "loop_a.toml"\n')
    (tmp_path / "variant.toml").write_text(text)
    with pytest.raises(ExperimentError) as exc:
        load_experiment(tmp_path / "variant.toml")
    assert fragment in str(exc.value) and "\n" not in str(exc.value)


def test_a_bad_variant_at_the_cli_is_one_line_and_exit_2(tmp_path):
    import subprocess
    import sys
    (tmp_path / "variant.toml").write_text('extends = "missing.toml"\n')
    r = subprocess.run([sys.executable, "-m", "descent", "experiment", str(tmp_path / "variant.toml"),
                        "--stage", "report"], capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 2 and "extends 'missing.toml': no such file" in r.stderr
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
