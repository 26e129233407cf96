"""Setting fields of llama.cpp's parameter structs, refusing names the binding does not have.

Why: ctypes accepts an assignment to any attribute of a Structure, so a field that llama-cpp-python renamed or
dropped (0.3.36 replaced `use_mmap` with `load_mode`) is set on the Python object and never reaches llama.cpp.
Every assignment to a parameter struct in runtime/ goes through set_fields (tests/runtime/test_params.py checks
that none bypasses it).
"""

from __future__ import annotations

import ctypes

from localspec.errors import LocalspecError


def struct_fields(struct: ctypes.Structure) -> set[str]:
    return {f[0] for f in type(struct)._fields_}


def set_fields(struct: ctypes.Structure, **values) -> ctypes.Structure:
    """Assign each value to the field of that name; LocalspecError naming the first one the struct lacks."""
    known = struct_fields(struct)
    missing = [k for k in values if k not in known]
    if missing:
        raise LocalspecError(f"this llama-cpp-python build has no {type(struct).__name__}.{missing[0]} "
                             "(its bindings changed): update localspec or install a matching llama-cpp-python")
    for key, value in values.items():
        setattr(struct, key, value)
    return struct
