"""Saved prompt prefixes (runtime/prefixes.py, Context.prefill) on real llama.cpp contexts of the tiny GGUF: a wanted
prefix is saved as its prefill passes its end, a new context (as after a restart) restores it instead of computing
it and then generates exactly what a fresh computation generates; progress is reported batch by batch."""

from __future__ import annotations

import time

import numpy as np
import pytest

from localspec.runtime.context import Context, ContextSettings
from localspec.runtime.model import Model
from localspec.runtime.prefixes import PrefixStore, Wanted, model_key

SETTINGS = ContextSettings(n_ctx=1024, n_batch=128, n_threads=1)


@pytest.fixture(scope="module")
def model(tiny_target):
    m = Model(tiny_target)
    yield m
    m.close()


def prompt(n: int, seed: int = 0) -> list[int]:
    return [int(t) for t in np.random.default_rng(seed).integers(10, 200, size=n)]


def greedy(ctx: Context, tokens: list[int], n: int = 12) -> list[int]:
    """`n` greedy tokens after `tokens` (prefill, then one token at a time)."""
    ctx.prefill(tokens)
    out = []
    for _ in range(n):
        tok = int(np.argmax(ctx.logits(-1)))
        out.append(tok)
        ctx.decode([tok])
    return out


def store_for(model, folder, wanted=None) -> PrefixStore:
    return PrefixStore(folder / model_key(model.path, "test"), wanted)


def test_a_saved_prefix_is_restored_by_a_new_context_and_changes_nothing(model, tmp_path):
    head, tail, other = prompt(300), prompt(9, seed=1), prompt(7, seed=2)
    fresh = Context(model, SETTINGS)
    try:
        expected = greedy(fresh, head + tail)
    finally:
        fresh.close()

    first = Context(model, SETTINGS)  # the first chat with these tools: computes the prefix, saves it on the way
    first.prefixes = store_for(model, tmp_path)
    first.prefixes.wanted.add(head)
    try:
        assert greedy(first, head + tail) == expected
        info = first.last_prefill
        assert info.evaluated == len(head + tail) and info.saved == len(head) and info.restored == 0
        assert first.prefixes.path(head).is_file()
    finally:
        first.close()

    second = Context(model, SETTINGS)  # a restart: the same tools, another question
    second.prefixes = store_for(model, tmp_path)
    second.prefixes.wanted.add(head)
    try:
        assert greedy(second, head + tail) == expected  # restored state, same greedy output as computed
        info = second.last_prefill
        assert info.restored == len(head) and info.evaluated == len(tail) and info.cached == len(head)
        second.prefill(head + other)  # within the process the cache's own common prefix does it, no file read
        assert second.last_prefill.reused == len(head) and second.last_prefill.restored == 0
    finally:
        second.close()


def test_a_file_for_other_tokens_is_refused_and_removed(model, tmp_path):
    head, tail = prompt(200, seed=3), prompt(5, seed=4)
    store = store_for(model, tmp_path)
    store.wanted.add(head)
    ctx = Context(model, SETTINGS)
    ctx.prefixes = store
    try:
        ctx.prefill(head + tail)
        saved = store.path(head)
        assert saved.is_file()
        imposter = prompt(200, seed=5)  # another prefix's file under this prefix's name (a hash clash)
        ctx.clear()
        ctx.prefixes = None
        ctx.prefill(imposter)
        ctx._save(saved, store)
        ctx.clear()
        ctx.prefixes = store
        ctx.prefill(head + tail)
        assert ctx.last_prefill.restored == 0 and ctx.last_prefill.evaluated == len(head + tail)
        assert ctx.tokens == head + tail
    finally:
        ctx.close()


def test_progress_is_reported_before_and_after_every_batch(model):
    ctx = Context(model, SETTINGS)
    seen: list[tuple[int, int]] = []
    try:
        ctx.prefill(prompt(700, seed=6), progress=lambda done, total: seen.append((done, total)))
    finally:
        ctx.close()
    assert seen[0] == (0, 700) and seen[-1] == (700, 700)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen) and len(seen) >= 4  # batches, not one at the end
    assert seen[1][0] <= 64  # the first batch is small: a long prompt says so at once


def test_how_a_prompt_is_split_does_not_depend_on_the_machines_load(model):
    """The split changes the cache's last bits, so a greedy reply at a near-tie followed the load (issue 34's app
    runs): the same prompt is read in the same batches, however slowly each one goes."""
    def splits(slow: bool) -> list[int]:
        ctx = Context(model, SETTINGS)
        seen: list[int] = []

        def progress(done: int, total: int) -> None:
            seen.append(done)
            if slow and done:
                time.sleep(0.2)  # a busy machine: this batch took long

        try:
            ctx.prefill(prompt(700, seed=6), progress=progress)
        finally:
            ctx.close()
        return seen

    quick = splits(False)
    assert quick == splits(True)
    assert quick[:4] == [0, 64, 64 + 128, 64 + 256]  # the first batch small, then doubling up to n_batch (128)


def test_short_prefixes_are_not_worth_a_file_and_old_files_go(model, tmp_path):
    wanted = Wanted()
    wanted.add(prompt(10))
    assert wanted.within(prompt(10) + [5]) == []
    store = PrefixStore(tmp_path / "p", wanted, max_files=2)
    ctx = Context(model, SETTINGS)
    ctx.prefixes = store
    try:
        for seed in range(4):
            head = prompt(80, seed=10 + seed)
            wanted.add(head)
            ctx.prefill(head + [7, 8])
        assert len(list((tmp_path / "p").glob("*.state"))) == 2
        assert store.path(head).is_file()  # the newest kept
    finally:
        ctx.close()


# -- issue 38.2: a damaged, foreign or planted state is refused in one line and computed again ---------------------
ATTACK = r"""
import json, os, shutil, sys
from pathlib import Path
import numpy as np
from localspec.runtime.context import Context, ContextSettings
from localspec.runtime.llama import lib
from localspec.runtime.model import Model
from localspec.runtime.prefixes import PrefixStore, model_key

target, other, folder, case = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]), sys.argv[4]
S = ContextSettings(n_ctx=1024, n_batch=128, n_threads=1)
prompt = lambda n, seed: [int(t) for t in np.random.default_rng(seed).integers(10, 200, size=n)]

def greedy(ctx, tokens, n=10):
    ctx.prefill(tokens)
    out = []
    for _ in range(n):
        out.append(int(np.argmax(ctx.logits(-1))))
        ctx.decode([out[-1]])
    return out

def saving(model, tokens):
    ctx = Context(model, S)
    ctx.prefixes = PrefixStore(folder / model_key(model.path, "t"))
    ctx.prefixes.wanted.add(tokens)
    greedy(ctx, tokens + [5, 6])
    ctx.close()
    return ctx.prefixes.path(tokens)

m = Model(target)
head, tail = prompt(300, 0), prompt(9, 1)
fresh = Context(m, S)
expected = greedy(fresh, head + tail)
fresh.close()
path = saving(m, head)
if case == "truncated":
    os.truncate(path, path.stat().st_size - 548)
elif case == "padded":
    with open(path, "ab") as fh:
        fh.write(b"\0" * 4096)
elif case == "foreign":  # another model of the same shape, its state for the same tokens copied over
    shutil.copyfile(saving(Model(other), head), path)
elif case == "planted":  # another system prompt's state, stored under this prompt's tokens
    ctx = Context(m, S)
    ctx.prefill(prompt(300, 7))
    arr = (lib.llama_token * len(head))(*head)
    assert lib.llama_state_seq_save_file(ctx.ptr, str(path).encode(), 0, arr, len(head)) > 0
    ctx.close()
second = Context(m, S)
second.prefixes = PrefixStore(folder / model_key(m.path, "t"))
second.prefixes.wanted.add(head)
out = greedy(second, head + tail)
print(json.dumps({"same": out == expected, "restored": second.last_prefill.restored,
                  "evaluated": second.last_prefill.evaluated, "saved_again": second.last_prefill.saved}))
"""


@pytest.mark.parametrize("case", ["truncated", "padded", "foreign", "planted"])
def test_a_damaged_foreign_or_planted_state_is_refused_in_one_line(tiny_target, tiny_dir, tmp_path, case):
    """Each in its own process: llama.cpp's own loader aborted the process on a truncated file (SIGABRT, exit 134),
    restored a state planted under this prompt's tokens (other output) and another model's state of the same
    shape."""
    import json
    import subprocess
    import sys

    from localspec.runtime.tinymodel import write_tiny_llama

    other = write_tiny_llama(tiny_dir / "same-shape.gguf", vocab="a", seed=9)
    run = subprocess.run([sys.executable, "-c", ATTACK, str(tiny_target), str(other), str(tmp_path / "prefixes"),
                          case], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, (run.returncode, run.stderr[-2000:])
    got = json.loads(run.stdout.strip().splitlines()[-1])
    assert got == {"same": True, "restored": 0, "evaluated": 309, "saved_again": 300}, got
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("localspec: saved prompt prefix ") and "computed again" in lines[0]


def _saved(model, folder, tokens, **kw) -> PrefixStore:
    store = PrefixStore(folder, **kw)
    store.wanted.add(tokens)
    ctx = Context(model, SETTINGS)
    ctx.prefixes = store
    try:
        ctx.prefill(tokens + [5])
    finally:
        ctx.close()
    return store


def test_folders_are_private_and_tightened_and_someone_elses_is_not_used(model, tmp_path):
    import os
    import stat

    cache = tmp_path / "cache"
    cache.mkdir(mode=0o755)
    os.chmod(cache, 0o755)
    folder = cache / "prefixes" / "model-x"
    head = prompt(100, seed=20)
    lines: list[str] = []
    store = _saved(model, folder, head, top=cache, report=lines.append)
    assert store.path(head).is_file() and lines == []
    for path in (cache, cache / "prefixes", folder):
        assert stat.S_IMODE(path.stat().st_mode) == 0o700, path
    assert stat.S_IMODE(store.path(head).stat().st_mode) == 0o600
    assert stat.S_IMODE((cache / "prefixes" / "key").stat().st_mode) == 0o600

    os.chmod(folder, 0o777)  # an existing folder left open: made private again
    _saved(model, folder, prompt(100, seed=21), top=cache, report=lines.append)
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700 and lines == []

    if os.geteuid() == 0:  # someone else's folder: not read, not written, said once
        theirs = cache / "prefixes" / "model-y"
        theirs.mkdir()
        os.chown(theirs, 4242, 4242)
        store = _saved(model, theirs, head, top=cache, report=lines.append)
        assert not any(theirs.iterdir()) and len(lines) == 1 and "another user" in lines[0]
        assert store.saved(head + [1]) is None


def test_the_temporary_file_is_unpredictable_and_never_followed(model, tmp_path, monkeypatch):
    """The temporary name was `<hash>.state.<pid>.tmp` and followed if it was a link (localspec overwrote and
    chmod'ed the file it pointed to). Now it is random, and a link there (or at the final name) is never written
    through."""
    import secrets

    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    victim.chmod(0o644)
    folder = tmp_path / "prefixes" / "m"
    head = prompt(100, seed=22)
    names = []
    real = secrets.token_hex
    monkeypatch.setattr(secrets, "token_hex", lambda n=16: names.append(real(n)) or names[-1])
    store = _saved(model, folder, head)
    assert store.path(head).is_file() and len(names) == 1 and not list(folder.glob("*.tmp"))
    assert len(names[0]) == 24  # 96 random bits, not the process id

    store.path(head).unlink()
    store.path(head).symlink_to(victim)  # at the final name: the rename replaces the link itself
    monkeypatch.setattr(secrets, "token_hex", lambda n=16: "fixed")
    (folder / ".fixed.tmp").symlink_to(victim)  # at the (here known) temporary name: O_EXCL|O_NOFOLLOW refuses it
    store = _saved(model, folder, head)
    assert "cannot save" in (store.error or "")
    assert victim.read_text() == "precious\n" and oct(victim.stat().st_mode & 0o777) == "0o644"
    (folder / ".fixed.tmp").unlink()
    store = _saved(model, folder, head)
    assert store.path(head).is_file() and not store.path(head).is_symlink()
    assert victim.read_text() == "precious\n"


def test_a_state_is_on_disk_before_its_name_is(model, tmp_path, monkeypatch):
    """fsync before the rename (and of the folder after it): a power cut leaves the old file or the new one."""
    import os

    assert PrefixStore(tmp_path / "prefixes" / "m").writable()  # the folder and its key, made once
    order = []
    real_fsync, real_replace = os.fsync, os.replace
    monkeypatch.setattr(os, "fsync", lambda fd: order.append("fsync") or real_fsync(fd))
    monkeypatch.setattr(os, "replace", lambda a, b: order.append("replace") or real_replace(a, b))
    _saved(model, tmp_path / "prefixes" / "m", prompt(100, seed=23))
    assert order == ["fsync", "replace", "fsync"]


def test_a_folder_holds_at_most_its_bound_in_bytes(model, tmp_path):
    folder = tmp_path / "prefixes" / "m"
    one = _saved(model, folder, prompt(100, seed=30))
    size = one.path(prompt(100, seed=30)).stat().st_size
    heads = [prompt(100, seed=31 + i) for i in range(3)]
    for head in heads:
        store = _saved(model, folder, head, max_bytes=2 * size + 100)
    files = list(folder.glob("*.state"))
    assert len(files) == 2 and sum(f.stat().st_size for f in files) <= 2 * size + 100
    assert store.path(heads[-1]).is_file()  # the newest kept
    small = _saved(model, folder, prompt(100, seed=40), max_bytes=size // 2)  # bigger than the bound: not saved
    assert not small.path(prompt(100, seed=40)).exists() and "not saved" in (small.error or "")
