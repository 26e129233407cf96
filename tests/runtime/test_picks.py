"""Rows picked where the output layer runs (llama.cpp's backend sampling), on real llama.cpp: each row's best tokens
are exactly the top of the whole row, a whole row can still be had (computed again on a side sequence), and the
cache holds nothing of that side sequence afterwards."""

from __future__ import annotations

import numpy as np
import pytest

from localspec.errors import LocalspecError
from localspec.runtime.context import Context, ContextSettings, may_pick_on_device
from localspec.runtime.llama import lib
from localspec.runtime.model import Model

K = 8


def _both(model: Model, tokens: list[int], n_rows: int) -> tuple[Context, Context]:
    """A context reading whole rows and one picking on the device, each after the same decodes."""
    raw = Context(model, ContextSettings(n_ctx=512, n_batch=64, device_picks="off"))
    dev = Context(model, ContextSettings(n_ctx=512, n_batch=64, device_picks="on"))
    assert not raw.pick_on_device(K) and dev.pick_on_device(K) and dev.picks_on_device == K
    for ctx in (raw, dev):
        ctx.prefill(tokens[:-n_rows])
        ctx.decode(tokens[-n_rows:], "all")
    return raw, dev


@pytest.mark.parametrize("fixture", ["tiny_target", "smollm2"])
def test_best_tokens_are_the_top_of_the_whole_row(fixture, request):
    m = Model(request.getfixturevalue(fixture))
    toks = m.tokenize("The quick brown fox jumps over the lazy dog. And then it ran")
    raw, dev = _both(m, toks, 6)
    for i in list(range(6)) + [-1, -3]:
        row = raw.logits(i)
        best = np.lexsort((np.arange(len(row)), -row))[:K]  # highest first, equal logits by id
        ids, logits = dev.top(i)
        assert ids == best.tolist()
        assert logits == row[best].tolist()  # the very same floats: the same forward pass produced them
    assert raw.top(0) is None  # a context reading whole rows has no picks
    assert dev.side_decodes == 0


def test_a_whole_row_is_computed_again_on_a_side_sequence(smollm2):
    m = Model(smollm2)
    toks = m.tokenize("The quick brown fox jumps over the lazy dog. And then it ran")
    raw, dev = _both(m, toks, 6)
    tops = [dev.top(i) for i in range(6)]
    base = len(toks) - 6
    row = dev.logits(3)
    assert dev.side_decodes == 1
    # What target-only decoding computes there: one token after the same cache.
    raw.truncate(base + 3)
    raw.decode([toks[base + 3]])
    single = raw.logits(-1)
    assert int(np.argmax(row)) == int(np.argmax(single)) == tops[3][0][0]
    np.testing.assert_allclose(row, single, rtol=0, atol=1e-3)  # the same positions, summed in another order
    # The batch's picks survive the side decode, and the side sequence left nothing in the cache.
    assert [dev.top(i) for i in range(6)] == tops
    assert lib.llama_memory_seq_pos_max(dev.mem, 1) == -1
    assert lib.llama_memory_seq_pos_max(dev.mem, 0) == len(toks) - 1
    # Speculation goes on from the same cache: a rollback and the next pass pick as before.
    dev.truncate(base + 3)
    dev.decode(toks[base + 3:], "all")
    assert dev.top(0)[0][0] == tops[3][0][0]
    dev.truncate(base)
    with pytest.raises(LocalspecError):
        dev.logits(2)  # the cache no longer holds that row's tokens


def test_whole_rows_again_once_picks_are_off(tiny_target):
    m = Model(tiny_target)
    toks = m.tokenize("the file name is")
    raw, dev = _both(m, toks, 3)
    assert not dev.pick_on_device(0) and dev.picks_on_device == 0
    dev.truncate(len(toks) - 3)
    dev.decode(toks[-3:], "all")
    np.testing.assert_array_equal(dev.logits(1), raw.logits(1))
    assert dev.top(1) is None and dev.side_decodes == 0
    assert dev.pick_on_device(4) and dev.picks_on_device == 4  # and back, with another k


def test_which_contexts_may_pick_on_device(tiny_target):
    m = Model(tiny_target)
    assert may_pick_on_device(m, "on") and not may_pick_on_device(m, "off")
    # "auto": where the output layer runs on a GPU, which a CPU build never does.
    assert may_pick_on_device(m, "auto") == bool(lib.llama_supports_gpu_offload())
    with pytest.raises(LocalspecError, match="device_picks"):
        may_pick_on_device(m, "gpu")


def test_a_picking_context_refuses_more_rows_than_it_reserved(tiny_target):
    """llama.cpp reserves a picking context's buffers for PICKED_ROWS_MAX rows and aborts the process past them:
    the context refuses such a decode first (the engine never drafts that far: room < max_rows)."""
    from localspec.runtime.context import PICKED_ROWS_MAX

    m = Model(tiny_target)
    dev = Context(m, ContextSettings(n_ctx=1024, n_batch=512, device_picks="on"))
    assert dev.max_rows == PICKED_ROWS_MAX < dev.n_batch
    toks = (m.tokenize("the file name is", add_special=False) * 200)[:PICKED_ROWS_MAX + 1]
    with pytest.raises(ValueError, match="logits rows"):
        dev.decode(toks, "all")
    assert dev.n_past == 0
    dev.decode(toks, [True] * PICKED_ROWS_MAX + [False])  # as many as reserved: fine
    assert Context(m, ContextSettings(n_ctx=1024, n_batch=512, device_picks="off")).max_rows == 512
