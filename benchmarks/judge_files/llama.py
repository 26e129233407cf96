"""The single place that imports llama_cpp: quiet logging and one-time backend init."""

from __future__ import annotations

import ctypes
import os

import llama_cpp as lib

_initialised = False
_GGML_LOG_LEVEL_ERROR = 4  # ggml.h: NONE, DEBUG, INFO, WARN, ERROR


@lib.llama_log_callback
def _quiet_log(level, text, user_data):  # pragma: no cover - called from C
    # llama.cpp logs every tensor at load time; only errors are worth showing.
    if level == _GGML_LOG_LEVEL_ERROR and os.environ.get("LOCALSPEC_LLAMA_LOG"):
        print(text.decode("utf-8", "replace"), end="")


def init() -> None:
    """Initialise llama.cpp's backends once per process, silencing its logs unless LOCALSPEC_LLAMA_LOG=1."""
    global _initialised
    if _initialised:
        return
    if os.environ.get("LOCALSPEC_LLAMA_LOG") != "all":
        lib.llama_log_set(_quiet_log, ctypes.c_void_p(0))
    lib.llama_backend_init()
    _initialised = True
