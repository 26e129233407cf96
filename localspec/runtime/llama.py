"""The single place that imports llama_cpp: quiet logging and one-time backend init."""

from __future__ import annotations

import ctypes
import os
import sys
from contextlib import contextmanager
from typing import Iterator

import llama_cpp as lib

from localspec.constants import ENV_LLAMA_LOG

_initialised = False
_GGML_LOG_LEVEL_ERROR = 4  # ggml.h: NONE, DEBUG, INFO, WARN, ERROR, CONT
_listeners: list[list[str]] = []  # open capture() blocks: each gets every message, whatever its level


@lib.llama_log_callback
def _log(level, text, user_data):  # pragma: no cover - called from C
    msg = text.decode("utf-8", "replace")
    for sink in _listeners:
        sink.append(msg)
    # llama.cpp logs every tensor at load time; only errors are worth showing, and on stderr: stdout carries the
    # answer (`run --json`, piped output) and must not get llama.cpp's complaints mixed into it.
    mode = os.environ.get(ENV_LLAMA_LOG)
    if mode == "all" or (mode and level == _GGML_LOG_LEVEL_ERROR):
        print(msg, end="", file=sys.stderr, flush=True)


def init() -> None:
    """Initialise llama.cpp's backends once per process, silencing its logs unless LOCALSPEC_LLAMA_LOG is set
    (1: errors; all: everything), always on stderr."""
    global _initialised
    if _initialised:
        return
    lib.llama_log_set(_log, ctypes.c_void_p(0))
    lib.llama_backend_init()
    _initialised = True


@contextmanager
def capture() -> Iterator[list[str]]:
    """Collect what llama.cpp logs inside the block (all levels; pieces as logged, lines may arrive in parts): how
    a model load placed its layers is only said there."""
    init()
    sink: list[str] = []
    _listeners.append(sink)
    try:
        yield sink
    finally:
        _listeners.remove(sink)
