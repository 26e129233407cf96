"""Downloads through huggingface_hub from a local hub (tests/hub_server.py): plain, resumed, corrupted, offline,
out of disk space; pair compatibility; add/rm; what a command runs on when it needs a model."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import threading
from collections import namedtuple
from pathlib import Path

import pytest

from localspec.errors import DownloadError, ModelFileError
from localspec.launch.resolve import resolve_models, resolve_selection
from localspec.models import hub as hubmod
from localspec.models.install import add_pair, pull_file, pull_pair, remove
from localspec.models.paths import get_paths
from localspec.models.registry import load_registry
from localspec.models.selection import demo_model_path
from localspec.settings.config_toml import load_config
from tests.hub_server import DRAFT_FILE, DRAFT_REPO, TARGET_FILE, TARGET_REPO, catalog_toml
from tests.hub_server import run_cli as run

BIG_REPO, BIG_FILE = "test-org/big-GGUF", "big.gguf"
MB = 1 << 20


def error(capsys) -> str:
    """The one "error: ..." line (stderr may also hold progress notes such as "verifying x.gguf")."""
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("error:")]
    assert len(lines) == 1, lines
    return lines[0]


def listed(capsys) -> dict:
    capsys.readouterr()
    assert run("models", "--json") == 0
    return json.loads(capsys.readouterr().out)


@pytest.fixture
def big(hub, home):
    """A 24 MB file: larger than huggingface_hub's 10 MB download chunk, so a dropped connection leaves data."""
    data = b"GGUF" + os.urandom(24 * MB)
    return hub.add_file(BIG_REPO, BIG_FILE, data)


def test_pull_pair_downloads_verifies_and_checks_compat(tiny_hub, capsys, tiny_pair_paths):
    assert run("pull", "tiny") == 0
    assert "pair 'tiny' ready" in capsys.readouterr().out
    data = listed(capsys)
    installed = {(f["repo"], f["file"]): f for f in data["installed"]}
    assert set(installed) == {(TARGET_REPO, TARGET_FILE), (DRAFT_REPO, DRAFT_FILE)}
    t = installed[(TARGET_REPO, TARGET_FILE)]
    assert Path(t["path"]).read_bytes() == tiny_pair_paths[0].read_bytes()
    assert t["sha256"] == hashlib.sha256(tiny_pair_paths[0].read_bytes()).hexdigest()
    assert t["size"] == tiny_pair_paths[0].stat().st_size and t["status"] == "ok"
    assert set(t) >= {"repo", "file", "path", "size", "sha256"}
    pairs = {p["name"]: p for p in data["catalog"]}
    assert pairs["tiny"]["state"] == "installed" and pairs["tiny"]["default"]
    assert pairs["mismatched"]["state"] == "partial"
    assert Path(t["path"]).is_relative_to(get_paths().models_dir)
    # Pulling again is a no-op: no further GET.
    gets = len([r for r in tiny_hub.log if r["method"] == "GET"])
    assert run("pull", "tiny") == 0
    assert len([r for r in tiny_hub.log if r["method"] == "GET"]) == gets
    # And a command that needs a model now runs on it.
    target, draft = resolve_models(None, None, None, offline=True)
    assert (str(target), str(draft)) == (t["path"], installed[(DRAFT_REPO, DRAFT_FILE)]["path"])


def test_a_pair_of_two_families_is_pulled(tiny_hub, capsys):
    """A draft of another vocabulary drafts through text (speculative/sources/translated.py): not refused."""
    assert run("pull", "mismatched") == 0
    assert "pair 'mismatched' ready" in capsys.readouterr().out
    assert pull_pair("mismatched").draft.file == "tiny-other.gguf"


@pytest.mark.slow  # downloads from the local hub
def test_dropped_connection_resumes_within_the_pull(big, hub):
    big.faults.drop_after = 15 * MB
    entry = pull_file(BIG_REPO, BIG_FILE)
    assert Path(entry.path).read_bytes() == big.data and entry.sha256 == big.sha256
    ranges = [r["range"] for r in hub.gets(BIG_REPO, BIG_FILE)]
    assert ranges == [None, f"bytes={10 * MB}-"]  # the retry asked only for what was missing


@pytest.mark.slow  # downloads from the local hub
def test_interrupted_pull_is_resumed_by_the_next_pull(big, hub, capsys):
    big.faults.drop_after, big.faults.fail_after_drop = 15 * MB, 503
    assert run("pull", BIG_REPO, BIG_FILE) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: download of {BIG_REPO}/{BIG_FILE} interrupted (HTTP 503); 10 MB kept, run the "
                          "same pull again to resume")
    dest = get_paths().models_dir / BIG_REPO / BIG_FILE
    assert not dest.exists() and dest.with_name(BIG_FILE + ".part").stat().st_size == 10 * MB
    assert listed(capsys)["installed"] == []  # nothing half-downloaded is listed
    big.faults = type(big.faults)()
    assert run("pull", BIG_REPO, BIG_FILE) == 0
    assert dest.read_bytes() == big.data and not dest.with_name(BIG_FILE + ".part").exists()
    assert hub.gets(BIG_REPO, BIG_FILE)[-1]["range"] == f"bytes={10 * MB}-"
    assert [f["file"] for f in listed(capsys)["installed"]] == [BIG_FILE]


def test_cancel_keeps_the_partial_and_reports_progress(big):
    cancel, events = threading.Event(), []

    def progress(p):
        events.append(p)
        if p.phase == "download" and p.done >= 10 * MB:
            cancel.set()

    with pytest.raises(hubmod.DownloadCancelled):
        pull_file(BIG_REPO, BIG_FILE, progress=progress, cancel=cancel)
    assert events[0].done == 0 and events[0].total == len(big.data)
    part = get_paths().models_dir / BIG_REPO / (BIG_FILE + ".part")
    assert part.stat().st_size == 10 * MB
    events.clear()
    entry = pull_file(BIG_REPO, BIG_FILE, progress=events.append)
    assert entry.sha256 == big.sha256
    downloads = [e for e in events if e.phase == "download"]
    assert downloads[0].done == 10 * MB and downloads[-1].done == len(big.data)
    assert events[-1].phase == "verify" and events[-1].done == len(big.data)


def test_corrupted_bytes_are_refused_and_deleted(big, capsys):
    big.faults.corrupt = True
    assert run("pull", BIG_REPO, BIG_FILE) == 1
    err = error(capsys)
    assert err.startswith(f"error: checksum mismatch for {BIG_REPO}/{BIG_FILE}: expected sha256 {big.sha256[:16]}")
    assert err.rstrip().endswith("the download was deleted")
    folder = get_paths().models_dir / BIG_REPO
    assert [p.name for p in folder.iterdir() if not p.name.startswith(".")] == []
    assert listed(capsys)["installed"] == []


def test_catalog_checksum_is_preferred_over_the_etag(tiny_hub, tmp_path, monkeypatch, tiny_pair_paths):
    target, draft = (p.read_bytes() for p in tiny_pair_paths)
    cat = tmp_path / "pinned.toml"
    cat.write_text(catalog_toml({"tiny": ((TARGET_REPO, TARGET_FILE, target), (DRAFT_REPO, DRAFT_FILE, draft))},
                                "tiny", sha256=True).replace(hashlib.sha256(draft).hexdigest(), "0" * 64))
    monkeypatch.setenv("LOCALSPEC_CATALOG", str(cat))
    with pytest.raises(DownloadError, match=f"checksum mismatch for {DRAFT_REPO}/{DRAFT_FILE}: expected sha256 0000"):
        pull_pair("tiny")
    reg = load_registry(get_paths().registry_file)
    assert [f.file for f in reg.files] == [TARGET_FILE]  # the target verified fine; the draft is not listed


def test_offline_missing_model_is_one_line_naming_the_pull(tiny_hub, monkeypatch, capsys):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert run("pull", "tiny") == 1
    err = capsys.readouterr().err
    assert err == ("error: offline: pair 'tiny' is not downloaded (missing tiny-target.gguf, tiny-draft.gguf); "
                   "run `localspec pull tiny` (2 MB) when online\n")
    monkeypatch.delenv("HF_HUB_OFFLINE")
    assert run("pull", TARGET_REPO, TARGET_FILE, "--offline") == 1
    assert capsys.readouterr().err == (f"error: offline: {TARGET_REPO}/{TARGET_FILE} is not downloaded; run "
                                       f"`localspec pull {TARGET_REPO} {TARGET_FILE}` when online\n")
    assert [r for r in tiny_hub.log if r["repo"]] == []  # offline means no request at all
    with pytest.raises(ModelFileError, match=r"^offline and pair 'tiny' is not downloaded: run `localspec pull tiny`"):
        resolve_models("tiny", None, None, offline=True)
    # Once downloaded, offline use works.
    assert run("pull", "tiny") == 0
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert run("pull", "tiny") == 0
    assert resolve_models("tiny", None, None, offline=True)[1].name == DRAFT_FILE


def test_refuses_when_the_disk_is_too_small(big, hub, monkeypatch, capsys):
    real = shutil.disk_usage
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda p: usage(real(p).total, 0, 20 * MB))
    assert run("pull", BIG_REPO, BIG_FILE) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: not enough disk space for {BIG_REPO}/{BIG_FILE}: needs 92 MB, 21 MB free in ")
    assert hub.gets(BIG_REPO, BIG_FILE) == []  # refused before downloading anything


def test_pair_disk_check_counts_both_files(tiny_hub, monkeypatch):
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda p: usage(10**9, 0, hubmod.DISK_MARGIN))
    with pytest.raises(DownloadError, match=r"^not enough disk space for pair 'tiny': needs 69 MB"):
        pull_pair("tiny")


@pytest.mark.parametrize("args, message", [
    (("no-such-org/repo", "x.gguf"), "repository no-such-org/repo not found on http://127.0.0.1:"),
    ((TARGET_REPO, "missing.gguf"), f"missing.gguf not found in {TARGET_REPO}"),
    ((TARGET_REPO, TARGET_FILE, "--revision", "v9"), f"revision v9 not found in {TARGET_REPO}"),
    (("no-such-pair",), "unknown pair 'no-such-pair' (catalog: tiny, mismatched)"),
    ((TARGET_REPO,), f"give the file to download: localspec pull {TARGET_REPO} FILENAME"),
])
def test_hub_errors_are_one_line(tiny_hub, capsys, args, message):
    assert run("pull", *args) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: {message}") and err.count("\n") == 1


def test_non_lfs_file_is_checked_against_its_git_object_id(hub, home):
    hub.add_file("test-org/small", "small.gguf", b"GGUF tiny", lfs=False)
    assert pull_file("test-org/small", "small.gguf").sha256 == hashlib.sha256(b"GGUF tiny").hexdigest()
    hub.add_file("test-org/small", "bad.gguf", b"GGUF bytes", lfs=False).faults.corrupt = True
    with pytest.raises(DownloadError, match="checksum mismatch for test-org/small/bad.gguf: expected git object id"):
        pull_file("test-org/small", "bad.gguf")


def test_hf_token_is_sent(hub, home, monkeypatch):
    hub.add_file("test-org/private", "p.gguf", b"GGUF private")
    monkeypatch.setenv("HF_TOKEN", "hf_test_token")
    pull_file("test-org/private", "p.gguf")
    sent = [r["auth"] for r in hub.log if r["repo"] == "test-org/private"]
    assert sent and all(a == "Bearer hf_test_token" for a in sent)


@pytest.mark.skipif(demo_model_path() is None, reason="needs the packaged demo model (localspec[demo])")
def test_add_keeps_the_pair_in_use_the_default_unless_asked(tiny_hub, tiny_pair_paths, capsys):
    """Issue 39.6: `add` beside the demo made the new pair the default, silently (with default_pair unset the first
    added pair outranks the demo). Adding a model changes nothing that runs, as in Ollama or LM Studio, unless asked;
    every line says which pair is the default."""
    target = str(tiny_pair_paths[0])
    assert run("add", "smol", "--target", target) == 0
    out = capsys.readouterr().out
    assert "the default pair stays 'demo' (run this one with --pair smol;" in out
    assert resolve_selection().demo and load_config().default_pair == "demo"

    assert run("add", "mine", "--target", target, "--default") == 0
    assert "'mine' is the default pair now (it was 'demo')" in capsys.readouterr().out
    # The same name again with other files replaces the pair, and says what it was.
    assert run("add", "smol", "--target", target, "--draft", str(tiny_pair_paths[1])) == 0
    assert f"(it replaces 'smol': {tiny_pair_paths[0].resolve()} + (no draft))" in capsys.readouterr().out
    assert resolve_selection().pair == "mine"

    # A pulled pair that does not become the default says which one is.
    assert run("pull", "tiny") == 0
    assert "the default pair is 'mine' (run this one with --pair tiny;" in capsys.readouterr().out
    assert resolve_selection().pair == "mine"

    # Removing the default pair does not leave a default that names nothing.
    assert run("rm", "mine") == 0
    assert "'mine' was the default pair: the default is now 'tiny'" in capsys.readouterr().out
    assert load_config().default_pair is None and resolve_selection().pair == "tiny"
    assert run("run", "hi", "--pair", "mine") == 1  # a pair that is gone: every pair there is gets named
    assert "unknown pair 'mine' (pairs: tiny, mismatched, smol, demo;" in capsys.readouterr().err


def test_the_first_pair_added_where_nothing_runs_is_the_default(home, tiny_pair_paths, capsys, monkeypatch):
    monkeypatch.setattr("localspec.launch.resolve.demo_model_path", lambda: None)  # an install without [demo]
    assert run("add", "smol", "--target", str(tiny_pair_paths[0])) == 0
    assert "'smol' is the default pair (nothing else was installed)" in capsys.readouterr().out
    assert resolve_selection().pair == "smol" and load_config().default_pair is None


def test_add_registers_local_files_and_rm_forgets_them(home, tiny_pair_paths, tiny_other_vocab, capsys, monkeypatch):
    target, draft = tiny_pair_paths
    assert run("add", "mine", "--target", str(target), "--draft", str(draft)) == 0
    data = listed(capsys)
    assert data["pairs"] == {"mine": {"target": str(target.resolve()), "draft": str(draft.resolve()),
                                      "translated": False}}
    assert {f["path"] for f in data["installed"]} == {str(target.resolve()), str(draft.resolve())}
    assert resolve_models("mine", None, None, False) == (target.resolve(), draft.resolve())
    # A draft of another family is added too, and said to be translated.
    assert run("add", "two", "--target", str(target), "--draft", str(tiny_other_vocab)) == 0
    assert "(draft of another family: translated)" in capsys.readouterr().out
    assert listed(capsys)["pairs"]["two"]["translated"] is True
    assert run("rm", "two") == 0
    assert run("add", "qwen3-8b", "--target", str(target)) == 1
    assert "'qwen3-8b' is a catalog pair" in capsys.readouterr().err
    (home / "notgguf.gguf").parent.mkdir(parents=True, exist_ok=True)
    (home / "notgguf.gguf").write_text("hello")
    assert run("add", "x", "--target", str(home / "notgguf.gguf")) == 1
    assert "is not a GGUF file" in capsys.readouterr().err
    assert run("rm", "mine", "--files") == 0
    assert "kept: not in localspec's models folder" in capsys.readouterr().out
    assert target.exists() and draft.exists()  # files the user registered are never deleted
    assert listed(capsys)["pairs"] == {}


def test_models_says_which_chat_template_each_file_renders_with(home, tiny_pair_paths, tmp_path, capsys):
    from localspec.runtime.tinymodel import write_tiny_llama

    bare = write_tiny_llama(tmp_path / "bare.gguf", chat_template=None)
    assert run("add", "bare", "--target", str(bare), "--draft", str(tiny_pair_paths[1])) == 0
    by_file = {f["file"]: f["chat_template"] for f in listed(capsys)["installed"]}
    assert by_file["tiny-draft.gguf"] == {"source": "file", "family": None, "why": ""}
    assert by_file["bare.gguf"] == {"source": "family", "family": "chatml",
                                    "why": "architecture llama, <|im_start|> <|im_end|> tokens"}
    assert run("models") == 0
    out = capsys.readouterr().out
    assert "chat template: the chatml family's (the file has none; architecture llama" in out
    assert "chat template: the file's own" in out


def test_rm_pair_deletes_downloads_but_keeps_shared_files(tiny_hub, tiny_pair_paths, capsys):
    target_bytes, draft_bytes = (p.read_bytes() for p in tiny_pair_paths)
    tiny_hub.add_file("test-org/second-GGUF", "second.gguf", target_bytes)
    assert run("pull", "tiny") == 0
    assert run("pull", "test-org/second-GGUF", "second.gguf") == 0
    add_pair("shares-draft", get_paths().models_dir / "test-org/second-GGUF/second.gguf",
             get_paths().models_dir / DRAFT_REPO / DRAFT_FILE)
    capsys.readouterr()
    assert run("rm", "tiny", "--files") == 0
    out = capsys.readouterr().out
    assert f"kept {DRAFT_FILE} (used by pair 'shares-draft')" in out
    assert not (get_paths().models_dir / TARGET_REPO / TARGET_FILE).exists()
    assert (get_paths().models_dir / DRAFT_REPO / DRAFT_FILE).exists()
    assert {p["name"]: p["state"] for p in listed(capsys)["catalog"]}["tiny"] == "partial"
    assert run("rm", "nothing") == 1
    assert "nothing called 'nothing' is installed" in capsys.readouterr().err
    assert remove(DRAFT_REPO, DRAFT_FILE) == [f"forgot {DRAFT_FILE} (file kept at "
                                              f"{get_paths().models_dir / DRAFT_REPO / DRAFT_FILE}; add --files to "
                                              "delete it)"]


def test_no_model_message_names_the_default_pair_and_size(home, monkeypatch):
    import localspec.launch.resolve as resolve

    monkeypatch.setattr(resolve, "demo_model_path", lambda: None)
    with pytest.raises(ModelFileError, match=r"^no model: run `localspec pull qwen3-1.7b` \(2,474 MB\)$"):
        resolve_models(None, None, None, False)
    with pytest.raises(ModelFileError, match=r"^pair 'qwen3-8b' is not downloaded: run `localspec pull qwen3-8b` "
                                             r"\(5,667 MB\)$"):
        resolve_models("qwen3-8b", None, None, False)


def test_demo_model_when_no_pair_is_configured(home, smollm2):
    sel = resolve_selection()
    assert sel.demo and sel.target == smollm2 and sel.draft is None
    assert resolve_models(None, None, None, True) == (smollm2, None)


def test_explicit_paths_and_configured_default(tiny_hub, tiny_pair_paths, monkeypatch):
    target, draft = tiny_pair_paths
    assert resolve_models(None, target, None, False) == (target.resolve(), None)
    with pytest.raises(ModelFileError, match="model file not found"):
        resolve_models(None, target.with_name("nope.gguf"), None, False)
    monkeypatch.setenv("LOCALSPEC_DEFAULT_PAIR", "tiny")
    with pytest.raises(ModelFileError, match="pair 'tiny' is not downloaded"):
        resolve_models(None, None, None, False)  # a configured pair is never silently replaced by the demo
    pull_pair("tiny")
    sel = resolve_selection()
    assert sel.pair == "tiny" and sel.hints.draft_max == 4 and not sel.demo


def test_a_moved_localspec_home_keeps_its_models(tiny_hub, home, tmp_path, monkeypatch):
    pull_pair("tiny")
    moved = tmp_path / "usb-stick"
    shutil.move(str(home), moved)
    monkeypatch.setenv("LOCALSPEC_HOME", str(moved))
    target, draft = resolve_models("tiny", None, None, offline=True)
    assert target == moved / "data" / "models" / TARGET_REPO / TARGET_FILE and target.exists()
    assert draft.exists()
