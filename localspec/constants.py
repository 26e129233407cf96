"""Every environment variable localspec reads or sets, by name (as huggingface_hub's constants module keeps its own):
one place to look up what a variable does and to see that no two mean the same thing. Leaf module: it imports
nothing of localspec, so every layer may use it (runtime/ included).

The settings' own overrides are not listed one by one: each config key has LOCALSPEC_ + the key in capitals
with dots as underscores (LOCALSPEC_SAMPLING_TEMPERATURE; settings/config_toml.py builds them from ENV_PREFIX).
"""

from __future__ import annotations

ENV_PREFIX = "LOCALSPEC_"

# Where the files are: every folder (config, data, cache, logs) under this one instead of the per-OS ones.
ENV_HOME = "LOCALSPEC_HOME"
# The pair catalog to read instead of the packaged models.toml.
ENV_CATALOG = "LOCALSPEC_CATALOG"
# Errors show their traceback too (cli.py).
ENV_DEBUG = "LOCALSPEC_DEBUG"
# debug | info | warning: write the debug log in the log folder (debug_log.py).
ENV_LOG = "LOCALSPEC_LOG"
# Show llama.cpp's errors on stderr ("all": everything it logs).
ENV_LLAMA_LOG = "LOCALSPEC_LLAMA_LOG"
# Do not load llama.cpp's libraries before numpy's (native_first.py).
ENV_NO_PRELOAD = "LOCALSPEC_NO_PRELOAD"
# `localspec serve --api-key`'s default.
ENV_API_KEY = "LOCALSPEC_API_KEY"
# The bearer token for `--backend openai` (then OPENAI_API_KEY).
ENV_REMOTE_API_KEY = "LOCALSPEC_REMOTE_API_KEY"
ENV_OPENAI_API_KEY = "OPENAI_API_KEY"

# Set by localspec on the processes it starts, to find them again in /proc and stop every one (never read from
# the user): run_shell's commands, and MCP servers.
ENV_RUN_MARK = "LOCALSPEC_RUN"
ENV_MCP_SERVER_MARK = "LOCALSPEC_MCP_SERVER"
