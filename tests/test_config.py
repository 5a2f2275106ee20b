import pytest

from descent.config import ConfigError, all_configs, load_config
from descent.config import CONFIG_DIR


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
