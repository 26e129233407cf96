"""The user's settings: config.toml, validated by pydantic, with LOCALSPEC_ environment overrides
(`config_toml.py`: load_config(), save_config(settings), set_config_value(key, value), config_keys(); Settings;
Tuning)."""

from localspec.settings.config_toml import Settings, Tuning, config_keys, load_config, save_config, set_config_value

__all__ = ["Settings", "Tuning", "config_keys", "load_config", "save_config", "set_config_value"]
