"""llama.cpp's native libraries load before numpy's.

Why: on a CUDA machine (H200, CUDA 13, numpy 2.5) any process that had imported numpy before llama.cpp's libraries
were loaded died with SIGSEGV inside `llama_model_load_from_file`; loading llama.cpp's libraries first (the
LD_PRELOAD workaround, or `import llama_cpp` before numpy, as llama-cpp-python users report) avoided it. numpy
imports its linear algebra (and its bundled OpenBLAS) with `import numpy` itself, so avoiding numpy.linalg is not
enough: the order is what matters.

`install()` (called by `localspec/__init__.py`) puts a finder in front of the import system that, the first time
anything imports numpy, dlopens llama.cpp's shared libraries (no Python of llama-cpp-python runs, so nothing here
imports numpy in turn) and steps aside. Commands that never touch numpy (`--help`, `models`) pay nothing.
"""

from __future__ import annotations

import ctypes
import importlib.abc
import importlib.util
import os
import sys
from pathlib import Path

from localspec.constants import ENV_NO_PRELOAD

# Load order: ggml's base first, then the backends, then ggml and llama (each one's dependencies before it).
_ORDER = ("libggml-base", "libggml-cpu", "libggml-", "libggml.", "libllama.")
_loaded: list[str] = []  # what preload() opened, for `localspec doctor` and the tests


def library_dir() -> Path | None:
    """Where llama-cpp-python keeps llama.cpp's libraries (LLAMA_CPP_LIB_PATH overrides, as it does there)."""
    override = os.environ.get("LLAMA_CPP_LIB_PATH")
    if override:
        return Path(override)
    try:
        spec = importlib.util.find_spec("llama_cpp")  # locates the package without importing it
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0]) / "lib"


def _rank(name: str) -> int:
    return next((i for i, head in enumerate(_ORDER) if name.startswith(head)), len(_ORDER))


def preload() -> list[str]:
    """dlopen llama.cpp's libraries (globally, as LD_PRELOAD would); returns the files opened. Never raises: a
    library that fails to load here fails again, with llama-cpp-python's own message, when it is imported."""
    folder = library_dir()
    if folder is None or not folder.is_dir() or _loaded:
        return list(_loaded)
    suffix = ".dylib" if sys.platform == "darwin" else ".dll" if sys.platform == "win32" else ".so"
    names = sorted((p.name for p in folder.iterdir() if p.name.endswith(suffix) and "mtmd" not in p.name),
                   key=lambda n: (_rank(n), n))
    for name in names:
        try:
            ctypes.CDLL(str(folder / name), mode=getattr(ctypes, "RTLD_GLOBAL", 0))
            _loaded.append(name)
        except OSError:
            continue  # e.g. a backend whose driver is missing: llama.cpp reports it when it loads
    return list(_loaded)


class _BeforeNumpy(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "numpy" or name.startswith("numpy."):
            uninstall()
            preload()
        return None  # the normal finders import numpy itself


_finder = _BeforeNumpy()


def install() -> None:
    """Preload llama.cpp's libraries before numpy's first import (no-op once numpy is loaded: too late)."""
    if "numpy" in sys.modules or _finder in sys.meta_path or os.environ.get(ENV_NO_PRELOAD):
        return
    sys.meta_path.insert(0, _finder)


def uninstall() -> None:
    if _finder in sys.meta_path:
        sys.meta_path.remove(_finder)
