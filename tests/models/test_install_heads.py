"""Pairs whose drafting is a head: `pull` fetches the head beside its target from the hub (the local test hub,
tests/hub_server.py, serving real tiny GGUFs), `models` says what drafts each pair, a pair resolves to its target
and head, the engine drafts with it, and `rm --files` takes both away."""

from __future__ import annotations

import hashlib
import json

from localspec.launch.resolve import resolve_selection
from tests.hub_server import run_cli

REPO = "test-org/tiny-heads-GGUF"


def _file(role: str, name: str, data: bytes, head: str | None = None) -> list[str]:
    return [f"[pairs.{name}.{role}]", f'repo = "{REPO}"', f'file = "{role}-{name}.gguf"', f"size = {len(data)}",
            f'sha256 = "{hashlib.sha256(data).hexdigest()}"', 'licence = "apache-2.0"', "context_length = 2048",
            "verified = true"] + ([f'head = "{head}"'] if head else [])


def _catalog(hub, head_files, tmp_path, monkeypatch):
    llama, eagle3, q35 = (p.read_bytes() for p in (head_files.llama, head_files.eagle3, head_files.qwen35))
    hub.add_file(REPO, "target-eagle.gguf", llama)
    hub.add_file(REPO, "head-eagle.gguf", eagle3)
    hub.add_file(REPO, "target-mtp.gguf", q35)
    lines = ['default = "eagle"',
             '[pairs.eagle]', 'description = "a tiny target and its EAGLE-3 head"',
             *_file("target", "eagle", llama), *_file("head", "eagle", eagle3, "eagle3"),
             '[pairs.eagle.hints]', "memory_mb = 10",
             '[pairs.mtp]', 'description = "a tiny target with MTP layers"', *_file("target", "mtp", q35, "mtp"),
             '[pairs.mtp.hints]', "memory_mb = 10"]
    cat = tmp_path / "models.toml"
    cat.write_text("\n".join(lines) + "\n")
    monkeypatch.setenv("LOCALSPEC_CATALOG", str(cat))


def test_pull_fetches_the_head_beside_its_target(hub, home, head_files, tmp_path, monkeypatch, capsys):
    _catalog(hub, head_files, tmp_path, monkeypatch)
    assert run_cli("pull", "eagle") == 0
    out = capsys.readouterr().out
    assert "target" in out and "head" in out and "draft " not in out
    assert {g["path"] for g in hub.gets(REPO, "head-eagle.gguf")} and hub.gets(REPO, "target-eagle.gguf")
    sel = resolve_selection("eagle")
    assert sel.draft is None and sel.head is not None and sel.head.read_bytes() == head_files.eagle3.read_bytes()

    assert run_cli("models", "--json") == 0
    listed = {p["name"]: p for p in json.loads(capsys.readouterr().out)["catalog"]}
    assert listed["eagle"]["state"] == "installed" and listed["eagle"]["head"]["installed"]
    assert listed["eagle"]["drafts_with"] == ["EAGLE-3 head head-eagle.gguf"]
    assert listed["mtp"]["drafts_with"] == ["its MTP layers"] and listed["mtp"]["draft"] is None
    assert listed["eagle"]["size"] == head_files.llama.stat().st_size + head_files.eagle3.stat().st_size
    assert run_cli("models") == 0
    text = capsys.readouterr().out
    assert "drafting with EAGLE-3 head head-eagle.gguf" in text and "drafting with its MTP layers" in text

    # The pair runs with its head: the engine built from it drafts with the EAGLE-3 file.
    assert run_cli("run", "read the file", "--pair", "eagle", "--max-tokens", "4", "--json") == 0
    assert json.loads(capsys.readouterr().out)["head"]["kind"] == "eagle3"

    assert run_cli("rm", "eagle", "--files") == 0
    assert "deleted" in capsys.readouterr().out and not sel.head.exists() and not sel.target.exists()


def test_a_pair_drafting_with_its_mtp_layers_pulls_one_file(hub, home, head_files, tmp_path, monkeypatch, capsys):
    _catalog(hub, head_files, tmp_path, monkeypatch)
    assert run_cli("pull", "mtp") == 0
    capsys.readouterr()
    sel = resolve_selection("mtp")
    assert sel.draft is None and sel.head is None  # the head is in the target: loaded with its MTP layers
    assert run_cli("run", "read the file", "--pair", "mtp", "--max-tokens", "4", "--json") == 0
    assert json.loads(capsys.readouterr().out)["head"]["kind"] == "mtp"
