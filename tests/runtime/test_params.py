"""Every setting reaches llama.cpp: assignments to the binding's parameter structs go through set_fields, which
refuses a field the struct does not have (ctypes alone would accept it silently)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import localspec.runtime
from localspec.errors import LocalspecError
from localspec.runtime.llama import lib
from localspec.runtime.params import set_fields, struct_fields

RUNTIME = Path(localspec.runtime.__file__).parent


def test_set_fields_sets_known_fields():
    params = set_fields(lib.llama_model_default_params(), n_gpu_layers=7, vocab_only=True)
    assert params.n_gpu_layers == 7 and params.vocab_only


def test_set_fields_refuses_a_field_the_binding_lacks():
    # llama-cpp-python 0.3.36 has load_mode, not use_mmap: the old assignment must fail loudly.
    with pytest.raises(LocalspecError, match="llama_model_params.use_mmap"):
        set_fields(lib.llama_model_default_params(), use_mmap=True)
    assert "load_mode" in struct_fields(lib.llama_model_default_params())


def _struct_assignments(tree: ast.AST) -> list[tuple[int, str]]:
    """Attribute assignments on names that hold parameter structs (`params.x = ...`)."""
    out = []
    for node in ast.walk(tree):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, (ast.AugAssign, ast.AnnAssign)) else []
        for t in targets:
            if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and "param" in t.value.id:
                out.append((t.lineno, t.attr))
    return out


def test_no_runtime_module_assigns_struct_fields_directly():
    found = [f"{p.name}:{line} .{attr}" for p in sorted(RUNTIME.glob("*.py"))
             for line, attr in _struct_assignments(ast.parse(p.read_text()))]
    assert found == [], "assign llama.cpp parameter fields through runtime.params.set_fields: " + ", ".join(found)


@pytest.mark.parametrize("use_mmap,mode", [(None, "LLAMA_LOAD_MODE_AUTO"), (True, "LLAMA_LOAD_MODE_MMAP"),
                                           (False, "LLAMA_LOAD_MODE_NONE")])
def test_use_mmap_maps_to_load_mode(tiny_target, monkeypatch, use_mmap, mode):
    from localspec.runtime import model as model_mod

    seen = {}
    real = lib.llama_model_load_from_file

    def spy(path, params):
        seen["load_mode"] = params.load_mode
        return real(path, params)

    monkeypatch.setattr(model_mod.lib, "llama_model_load_from_file", spy)
    m = model_mod.Model(tiny_target, model_mod.ModelSettings(use_mmap=use_mmap))
    m.close()
    assert seen["load_mode"] == getattr(lib, mode)
