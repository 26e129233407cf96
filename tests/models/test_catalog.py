"""The shipped catalog is valid and packaged; invalid catalogs fail with one line naming the pair and field."""

from __future__ import annotations

from pathlib import Path

import pytest

from localspec.errors import ConfigError
from localspec.models.catalog import catalog_path, load_catalog, parse_catalog

ROOT = Path(__file__).resolve().parents[2]

GOOD = """
default = "p"
[pairs.p]
description = "a pair"
[pairs.p.target]
repo = "org/target-GGUF"
file = "target.gguf"
size = 1000
licence = "apache-2.0"
context_length = 4096
verified = true
[pairs.p.draft]
repo = "org/draft-GGUF"
file = "draft.gguf"
size = 100
licence = "apache-2.0"
context_length = 4096
verified = false
[pairs.p.hints]
memory_mb = 10
"""


def test_shipped_catalog_is_valid_and_covers_the_families():
    cat = load_catalog(ROOT / "models.toml")
    names = set(cat.pairs)
    assert {"qwen3-8b", "qwen2.5-7b", "qwen2.5-coder-7b", "llama-3.1-8b", "qwen3-1.7b"} <= names
    assert any(n.startswith("gemma-3") for n in names)
    default = cat.pairs[cat.default]
    assert default.size < 3_000_000_000 and default.hints.memory_mb <= 4000  # a laptop CPU can hold it
    for name, pair in cat.pairs.items():
        for f in pair.files():
            assert f.file.endswith(".gguf") and f.licence and f.context_length > 0, name
            if f.sha256:
                assert f.size > 0
    assert cat.pairs["qwen3-1.7b"].draft.sha256 == "9465e63a22add5354d9bb4b99e90117043c7124007664907259bd16d043bb031"


def test_packaged_copy_is_byte_identical():
    """models.toml is the source; the package data is built from it by copying (the wheel carries the copy)."""
    assert (ROOT / "localspec" / "data" / "models.toml").read_bytes() == (ROOT / "models.toml").read_bytes(), \
        "the packaged catalog is stale: cp models.toml localspec/data/models.toml"


def test_source_checkout_reads_top_level_catalog(monkeypatch):
    monkeypatch.delenv("LOCALSPEC_CATALOG", raising=False)
    assert catalog_path() == ROOT / "models.toml"
    monkeypatch.setenv("LOCALSPEC_CATALOG", "/elsewhere/models.toml")
    assert catalog_path() == Path("/elsewhere/models.toml")


def test_pull_hint_names_pair_and_size():
    cat = parse_catalog(GOOD)
    assert cat.pull_hint() == "`localspec pull p` (0 MB)"
    assert cat.pairs["p"].size == 1100


@pytest.mark.parametrize("edit, message", [
    (lambda s: s.replace('file = "target.gguf"\n', ""), "models.toml: pair 'p' target.file: field required"),
    (lambda s: s.replace("size = 100\n", "size = -5\n"), "models.toml: pair 'p' draft.size: input should be greater"),
    (lambda s: s.replace('repo = "org/draft-GGUF"', 'repo = "no-slash"'), "models.toml: pair 'p' draft.repo: string"),
    (lambda s: s.replace('file = "draft.gguf"', 'file = "draft.bin"'),
     "models.toml: pair 'p' draft.file: must be a relative .gguf file name"),
    (lambda s: s.replace("verified = false", 'verified = false\nsha256 = "abc"'), "models.toml: pair 'p' draft.sha256"),
    (lambda s: s.replace("verified = false", "verified = false\nlicense = 'x'"),
     "models.toml: pair 'p' draft.license: extra inputs are not permitted"),
    (lambda s: s.replace('default = "p"', 'default = "nope"'), "models.toml: default: pair 'nope' is not in the catalog"),
    (lambda s: s.replace("[pairs.p.hints]\nmemory_mb = 10\n", ""), "models.toml: pair 'p' hints: field required"),
    (lambda s: s.replace("[pairs.p]", "[pairs.p"), "models.toml: invalid TOML"),
])
def test_validation_errors_point_at_entry_and_field(edit, message):
    with pytest.raises(ConfigError) as e:
        parse_catalog(edit(GOOD))
    assert str(e.value).startswith(message), str(e.value)
    assert "\n" not in str(e.value)


def test_several_errors_are_counted_on_one_line():
    bad = GOOD.replace('file = "target.gguf"\n', "").replace("size = 100\n", "")
    with pytest.raises(ConfigError, match=r"^models.toml: pair 'p' target.file: field required \(and 1 more error\)$"):
        parse_catalog(bad)


def test_unreadable_catalog_file(tmp_path):
    with pytest.raises(ConfigError, match="cannot read the catalog"):
        load_catalog(tmp_path / "missing.toml")


def test_unknown_pair_lists_the_catalog():
    with pytest.raises(ConfigError, match=r"unknown pair 'x' \(catalog: p\)"):
        parse_catalog(GOOD).get("x")


def test_installed_package_reads_its_packaged_copy(monkeypatch):
    import localspec.models.catalog as catalog

    monkeypatch.setattr(catalog, "catalog_path", lambda: None)
    assert load_catalog() == load_catalog(ROOT / "models.toml")
