"""Folders from platformdirs / LOCALSPEC_HOME; config.toml load, set, show and LOCALSPEC_* overrides."""

from __future__ import annotations

import json

import platformdirs
import pytest

from localspec.errors import ConfigError
from localspec.models import tomlio
from localspec.models.catalog import Hints
from localspec.models.paths import get_paths
from localspec.settings.config_toml import Settings, config_keys, env_name, load_config, save_config, set_config_value
from tests.hub_server import run_cli as run


def test_localspec_home_puts_every_folder_under_it(tmp_path):
    p = get_paths({"LOCALSPEC_HOME": str(tmp_path)})
    assert (p.config_dir, p.data_dir, p.cache_dir, p.log_dir) == (
        tmp_path / "config", tmp_path / "data", tmp_path / "cache", tmp_path / "logs")
    assert p.config_file == tmp_path / "config" / "config.toml"
    assert p.models_dir == tmp_path / "data" / "models"


def test_without_localspec_home_platformdirs_decides():
    p = get_paths({})
    assert p.config_dir == platformdirs.user_config_path("localspec", appauthor=False)
    assert p.data_dir == platformdirs.user_data_path("localspec", appauthor=False)
    assert p.log_dir == platformdirs.user_log_path("localspec", appauthor=False)


def test_defaults_without_a_file(home):
    s = load_config()
    assert s == Settings()
    assert s.approval == "ask" and s.drafters.schema_ and s.backend.kind == "local" and s.default_pair is None


def test_set_writes_toml_and_show_reads_it(home, capsys):
    assert run("config", "set", "sampling.temperature", "0.2") == 0
    assert run("config", "set", "drafters.schema", "off") == 0
    assert run("config", "set", "approval", "read-only") == 0
    assert run("config", "set", "target_gpu_layers", "20") == 0
    raw = tomlio.loads(get_paths().config_file.read_text())
    assert raw == {"approval": "read-only", "target_gpu_layers": 20,
                   "drafters": {"schema": False}, "sampling": {"temperature": 0.2}}
    capsys.readouterr()
    assert run("config", "show", "--json") == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["sampling"]["temperature"] == 0.2 and shown["drafters"]["schema"] is False
    assert shown["approval"] == "read-only" and shown["sampling"]["top_k"] == Settings().sampling.top_k
    assert run("config", "show") == 0
    out = capsys.readouterr().out
    assert "sampling.temperature = 0.2" in out and 'approval = "read-only"' in out
    assert "sampling.seed = none  # random" in out and "draft_max = none  # the pair's hint" in out


def test_show_masks_the_api_key(home, capsys):
    set_config_value("backend.api_key", "sk-secret-123456")
    run("config", "show", "--json")
    assert json.loads(capsys.readouterr().out)["backend"]["api_key"] == "...3456"
    run("config", "show")
    out = capsys.readouterr().out
    assert "secret" not in out and 'backend.api_key = "...3456"' in out
    assert load_config().backend.api_key == "sk-secret-123456"


def test_none_resets_a_key(home):
    set_config_value("sampling.seed", "7")
    assert load_config().sampling.seed == 7
    set_config_value("sampling.seed", "none")
    assert load_config().sampling.seed is None
    assert "sampling" not in tomlio.loads(get_paths().config_file.read_text())


@pytest.mark.parametrize("key, value, message", [
    ("sampling.temperature", "hot", "config: sampling.temperature: input should be a valid number"),
    ("approval", "always", "config: approval: input should be 'ask', 'read-only' or 'auto'"),
    ("draft_max", "0", "config: draft_max: input should be greater than or equal to 1"),
    ("colour", "red", "unknown config key 'colour'"),
])
def test_bad_values_are_refused_and_not_written(home, capsys, key, value, message):
    assert run("config", "set", key, value) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: {message}") and err.count("\n") == 1
    assert not get_paths().config_file.exists()


def test_default_pair_must_exist(home, capsys):
    assert run("config", "set", "default_pair", "no-such-pair") == 1
    assert "unknown pair 'no-such-pair'" in capsys.readouterr().err
    assert run("config", "set", "default_pair", "qwen3-4b") == 0
    assert load_config().default_pair == "qwen3-4b"


def test_environment_overrides_file_but_is_not_saved(home, monkeypatch, capsys):
    set_config_value("sampling.top_p", "0.5")
    monkeypatch.setenv("LOCALSPEC_SAMPLING_TOP_P", "0.9")
    monkeypatch.setenv("LOCALSPEC_DRAFTERS_NGRAM", "false")
    monkeypatch.setenv("LOCALSPEC_BACKEND_KIND", "openai")
    s = load_config()
    assert (s.sampling.top_p, s.drafters.ngram, s.backend.kind) == (0.9, False, "openai")
    assert load_config(apply_env=False).sampling.top_p == 0.5
    set_config_value("theme", "nord")  # saving never bakes the override into the file
    assert tomlio.loads(get_paths().config_file.read_text()) == {"theme": "nord", "sampling": {"top_p": 0.5}}
    run("config", "show")
    assert "sampling.top_p = 0.9  # from LOCALSPEC_SAMPLING_TOP_P" in capsys.readouterr().out


def test_bad_environment_value_names_the_variable(home, monkeypatch):
    monkeypatch.setenv("LOCALSPEC_APPROVAL", "sometimes")
    with pytest.raises(ConfigError, match=r"^LOCALSPEC_APPROVAL='sometimes': input should be"):
        load_config()


def test_env_names_are_unique_and_skip_home():
    names = [env_name(k) for k in config_keys()]
    assert len(set(names)) == len(names)
    assert "LOCALSPEC_HOME" not in names and "LOCALSPEC_CATALOG" not in names


def test_broken_file_is_one_line(home):
    path = get_paths().config_file
    path.parent.mkdir(parents=True)
    path.write_text("approval = 'ask\n")
    with pytest.raises(ConfigError, match="config.toml: invalid TOML"):
        load_config()
    path.write_text("[sampling]\ntop_k = -1\n")
    with pytest.raises(ConfigError, match=r"^config.toml: sampling.top_k: input should be greater than or equal to 0$"):
        load_config()


def test_save_and_tuning_fallbacks(home):
    s = Settings()
    s.draft_max = 5
    s.sampling.seed = 3
    save_config(s)
    loaded = load_config()
    assert loaded.draft_max == 5 and loaded.sampling.seed == 3
    hints = Hints(draft_max=12, draft_p_min=0.6, target_gpu_layers=30, draft_gpu_layers=0, memory_mb=100)
    t = loaded.tuning(hints)
    assert (t.draft_max, t.draft_p_min, t.target_gpu_layers, t.draft_gpu_layers) == (5, 0.6, 30, 0)
    assert Settings().tuning().draft_max == 8


def test_toml_writer_round_trips():
    data = {"a": "quote\" and \\ and é", "b": 1.5, "c": True, "t": {"x": [1, 2], "y": None, "z": {"deep": 1}}}
    back = tomlio.loads(tomlio.dumps(data, header="hello"))
    assert back == {"a": "quote\" and \\ and é", "b": 1.5, "c": True, "t": {"x": [1, 2], "z": {"deep": 1}}}


def test_every_key_has_its_environment_name_and_only_that(home, monkeypatch):
    """pydantic-settings reads LOCALSPEC_<KEY> for every key, exact names only; "none" clears a value."""
    from localspec.settings.config_toml import env_overrides

    env = {env_name(k): "x" for k in config_keys()}
    assert env_overrides(env) == {k: "x" for k in config_keys()}
    assert env_overrides({"localspec_theme": "nord", "LOCALSPEC_HOME": "/h", "LOCALSPEC_CHAT_TEMPLATES": "{}"}) == {}
    monkeypatch.setenv("LOCALSPEC_DRAFTERS_SCHEMA", "false")
    monkeypatch.setenv("LOCALSPEC_TOOLS_ENV_ALLOW", "HF_TOKEN,AWS_*")
    monkeypatch.setenv("LOCALSPEC_DRAFT_MAX", "none")
    set_config_value("draft_max", "5")
    s = load_config()
    assert (s.drafters.schema_, s.tools.env_allow_names(), s.draft_max) == (False, ["HF_TOKEN", "AWS_*"], None)
