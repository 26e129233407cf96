"""Saved prompt prefixes (runtime/prefixes.py, Context.prefill) on real llama.cpp contexts of the tiny GGUF: a wanted
prefix is saved as its prefill passes its end, a new context (as after a restart) restores it instead of computing
it and then generates exactly what a fresh computation generates; progress is reported batch by batch."""

from __future__ import annotations

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
