"""llama.cpp's libraries load before numpy's, whatever a localspec process imports first (CUDA builds crashed at
model load when numpy came first: localspec/native_first.py). The dynamic loader's own trace says the order."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _init_order(code: str) -> list[str]:
    env = {**os.environ, "LD_DEBUG": "files", "PYTHONPATH": ROOT}
    env.pop("LOCALSPEC_NO_PRELOAD", None)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return re.findall(r"calling init: (\S+)", out.stderr)


def _first(order: list[str], pattern: str) -> int:
    hits = [i for i, path in enumerate(order) if re.search(pattern, os.path.basename(path))]
    assert hits, f"{pattern} never loaded"
    return hits[0]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads glibc's LD_DEBUG trace")
@pytest.mark.parametrize("code", [
    "import localspec.speculative.decoder",  # numpy at the top of the engine, llama.cpp below it
    "import localspec, numpy",  # anything importing numpy after localspec
    "import localspec.cli as c; c.build_parser()",  # the command line's own imports
    "from localspec.runtime.context import Context",
])
def test_llama_libraries_initialise_before_numpy(code):
    order = _init_order(code)
    if not any("numpy" in p for p in order):
        return  # that path never loads numpy: nothing to order
    assert _first(order, r"^libllama\.so") < _first(order, r"openblas|gfortran|_multiarray_umath"), order
