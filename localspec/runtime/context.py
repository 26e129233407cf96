"""Inference state over a Model: KV cache, batched decode, logits rows, rollback."""

from __future__ import annotations

import ctypes
import os
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable, Sequence, cast

import numpy as np

from localspec.errors import ContextOverflowError, LocalspecError
from localspec.runtime.llama import lib
from localspec.runtime.model import Model, gpu_offload_supported, offload_layers
from localspec.runtime.params import set_fields
from localspec.runtime.picks import TopK
from localspec.runtime.prefixes import PrefillInfo, PrefixStore

Progress = Callable[[int, int], None]  # (tokens evaluated so far, tokens to evaluate)
# With a progress callback the batches start at FIRST_BATCH tokens (a long prompt reports within a fraction of a
# second) and double up to n_batch. A fixed schedule, not one sized by how long the last batch took: how a prompt is
# split changes the cache's last bits, and a greedy reply that hangs on a near-tie then changed with the machine's
# load (the app's same turn, target-only on an F16 model, gave three different texts in five runs).
FIRST_BATCH = 64
RESTORE_GAIN = 32  # tokens a saved prefix must add over the cache's own reuse to be worth reading from disk

FLASH_ATTN = {"auto": lib.LLAMA_FLASH_ATTN_TYPE_AUTO, "on": lib.LLAMA_FLASH_ATTN_TYPE_ENABLED,
              "off": lib.LLAMA_FLASH_ATTN_TYPE_DISABLED}
DEVICE_PICKS = ("auto", "on", "off")
SIDE_SEQ = 1  # where a row is computed again without the backend sampler (Context.logits while picking on device)
# Most logits rows one decode may ask for on a context that may pick on the device. Why a cap: llama.cpp reserves
# its compute buffer for the most rows a decode may have, and sampling on the device adds a padded copy of them (on
# Gemma's 262k vocabulary with 512 rows: 514 MiB more); verify passes have at most 65 rows (config.MAX_DRAFT).
PICKED_ROWS_MAX = 128
# Drafted tokens a hybrid target can roll back by default: each costs one more copy of the recurrent state (Qwen3.5-9B:
# about 50 MiB each), and the heads these models ship draft 1-3 tokens (llama.cpp gives n_rs_seq = n_max, default 3).
ROLLBACK_DRAFT = 16


def default_threads() -> int:
    return max(1, min(8, os.cpu_count() or 1))


@dataclass(frozen=True)
class ContextSettings:
    n_ctx: int = 4096
    n_batch: int = 512
    n_threads: int = 0  # 0: one per core, up to 8
    flash_attn: str = "auto"  # auto | on | off
    swa_full: bool = True  # keep the whole sliding-window cache so rollback and prefix reuse stay exact
    # Whether rows may be picked where the output layer runs (Context.pick_on_device): "auto" where that layer is
    # offloaded to a GPU. On a CPU the graph's own top-k costs more than the copy and scan it saves: llama.cpp pads
    # the logits with a scalar loop before sampling (0.3-0.6 ms a row on Gemma's 262k vocabulary, see
    # benchmarks/overhead.py), where copying a row and numpy's argmax take 0.1 ms.
    device_picks: str = "auto"
    # Recurrent-state snapshots kept for rollback on hybrid and recurrent targets (Qwen3.5's DeltaNet layers), so
    # that rejected drafts roll back with seq_rm instead of a prefill of the whole context again; drafts are then
    # at most this long (max_draft). None: ROLLBACK_DRAFT on such targets, 0 elsewhere (llama.cpp ignores it there).
    n_rs_seq: int | None = None


def may_pick_on_device(model: Model, setting: str) -> bool:
    """Whether a context on `model` may pick rows on the device, for ContextSettings.device_picks."""
    if setting not in DEVICE_PICKS:
        raise LocalspecError(f"device_picks must be one of {', '.join(DEVICE_PICKS)}, not {setting!r}")
    if lib.llama_model_is_recurrent(model.ptr) or lib.llama_model_is_hybrid(model.ptr):
        return False  # their state cannot be copied to a side sequence as of an earlier position
    if setting == "auto":
        # llama.cpp offloads the output layer last: it is on the GPU once more layers are offloaded than repeat.
        return gpu_offload_supported() and offload_layers(model.settings.n_gpu_layers) > lib.llama_model_n_layer(
            model.ptr)
    return setting == "on"


class Context:
    """One sequence (seq 0) on a model. `tokens` mirrors what is in the KV cache, position by position."""

    def __init__(self, model: Model, settings: ContextSettings = ContextSettings()):
        if settings.flash_attn not in FLASH_ATTN:
            raise LocalspecError(f"flash_attn must be one of {', '.join(FLASH_ATTN)}, not {settings.flash_attn!r}")
        self.model = model
        self.settings = settings
        n_ctx = min(settings.n_ctx, model.n_ctx_train) if model.n_ctx_train > 0 else settings.n_ctx
        threads = settings.n_threads or default_threads()
        self.can_pick_on_device = may_pick_on_device(model, settings.device_picks)
        recurrent = bool(lib.llama_model_is_recurrent(model.ptr) or lib.llama_model_is_hybrid(model.ptr))
        n_rs_seq = settings.n_rs_seq if settings.n_rs_seq is not None else (ROLLBACK_DRAFT if recurrent else 0)
        # llama.cpp keeps the last n_rs_seq + 1 tokens of a sequence in one ubatch, and aborts (GGML_ASSERT
        # n_ubatch > n_keep_tail) when a ubatch cannot hold them.
        n_rs_seq = max(0, min(n_rs_seq, min(settings.n_batch, n_ctx) - 2))
        # Picking on the device needs a second sequence sharing the cache (one cache for both: kv_unified), where
        # a row is computed again without the sampler, and room for a whole batch of sampled rows in one sequence
        # (llama.cpp allows one by default).
        rows = min(settings.n_batch, PICKED_ROWS_MAX)
        side = dict(n_seq_max=2, kv_unified=True, n_outputs_max=rows, n_outputs_max_per_seq=rows) \
            if self.can_pick_on_device else dict(n_seq_max=1)
        params = set_fields(lib.llama_context_default_params(), n_ctx=n_ctx, n_batch=settings.n_batch,
                            n_ubatch=settings.n_batch, n_threads=threads, n_threads_batch=threads,
                            flash_attn_type=FLASH_ATTN[settings.flash_attn], swa_full=settings.swa_full, no_perf=True,
                            n_rs_seq=n_rs_seq, **side)
        ptr = lib.llama_init_from_model(model.ptr, params)
        if not ptr:
            raise LocalspecError(f"llama.cpp could not create a context of {n_ctx} tokens for {model.path.name}")
        self.ptr = ptr
        self.n_ctx = lib.llama_n_ctx(ptr)
        # llama.cpp clamps the batch to the window; sending more than it kept would trip a GGML_ASSERT.
        self.n_batch = min(settings.n_batch, lib.llama_n_batch(ptr), lib.llama_n_ubatch(ptr), self.n_ctx)
        # Most logits rows one decode may ask for (more would trip a GGML_ASSERT in llama.cpp: checked in decode).
        self.max_rows = min(self.n_batch, PICKED_ROWS_MAX) if self.can_pick_on_device else self.n_batch
        self.mem = lib.llama_get_memory(ptr)
        # Most tokens one draft may hold: a recurrent state rolls back at most n_rs_seq tokens (beyond that a
        # rejection would cost a prefill of the whole context again).
        rollback = lib.llama_n_rs_seq(ptr) if recurrent else 0
        self.max_draft = min(self.n_batch - 1, rollback) if rollback else self.n_batch - 1
        # Where the last decode began, while its recurrent snapshots may still be rolled back to (None: they may
        # not). llama.cpp's snapshots hold the states inside the last ubatch only, once: seq_rm further back, or a
        # second time, returns true all the same and leaves a wrong state.
        self._snapshots = bool(rollback)
        self._rollback_base: int | None = None
        # A draft head reading this context's hidden rows after each decode (runtime/heads.py: Tap), or None.
        self.tap: Any = None
        self.tokens: list[int] = []
        self.prefixes: PrefixStore | None = None  # saved prompt prefixes (launch/open sets it up)
        self.last_prefill = PrefillInfo()
        # Every decode's shape, (tokens, logits rows) -> count, and the seconds spent in decode(): what a cost
        # profile prices when projecting a run onto another machine (speculative/profile.py).
        self.shapes: Counter[tuple[int, int]] = Counter()
        self.decode_s = 0.0
        # Hears every decode's (tokens, logits rows, seconds): a draft model prices itself by its own decodes
        # (speculative/sources/draft_model.py), never by the wall time around them (a prefix read from disk, a
        # catch-up of what it missed, are not a token's price).
        self.on_decode: Callable[[int, int, float], None] | None = None
        self._batch = lib.llama_batch_init(self.n_batch, 0, 1)
        self._n_vocab = model.n_vocab
        self._row_type = ctypes.c_float * model.n_vocab  # one logits row, viewed in place (no copy)
        for i in range(self.n_batch):  # one sequence: seq ids never change, so set them once
            self._batch.n_seq_id[i] = 1
            self._batch.seq_id[i][0] = 0
        self._picks: TopK | None = None  # the sampler chain while rows are picked on the device
        self._tops: dict[int, tuple[list[int], list[float]] | None] = {}  # rows read back, by batch index
        self._tops_kept = False  # every row of the last batch is in _tops (a side decode overwrote llama.cpp's)
        self._last: tuple[int, list[int], list[bool]] | None = None  # the last batch: (position, tokens, flags)
        self._side_batch: Any = None  # a one-token batch on SIDE_SEQ, made on first use
        self.side_decodes = 0  # rows computed again on the side sequence (see logits())

    def close(self) -> None:
        if getattr(self, "ptr", None):
            if self._picks is not None:
                self._picks.detach()
                self._picks = None
            if self._side_batch is not None:
                lib.llama_batch_free(self._side_batch)
            lib.llama_batch_free(self._batch)
            lib.llama_free(self.ptr)
            self.ptr = None

    def __del__(self):  # pragma: no cover
        try:
            self.close()
        except Exception:
            pass

    @property
    def n_past(self) -> int:
        return len(self.tokens)

    def decode(self, tokens: Sequence[int], logits: Sequence[bool] | str = "last") -> None:
        """Append `tokens` to the sequence in one llama_decode call (the caller keeps len(tokens) <= n_batch).

        `logits` picks the rows that get an output: "last", "all", "none" or one bool per token. Rows that
        need no logits skip the output layer, which is most of the cost for large vocabularies.
        """
        n = len(tokens)
        if n == 0:
            return
        t0 = time.perf_counter()
        if n > self.n_batch:
            raise ValueError(f"batch of {n} tokens exceeds n_batch={self.n_batch}")
        if self.n_past + n > self.n_ctx:
            raise ContextOverflowError(
                f"context full: {self.n_past} + {n} tokens exceed the {self.n_ctx}-token window of {self.model.path.name}")
        if logits == "last":
            flags = [False] * (n - 1) + [True]
        elif logits == "all":
            flags = [True] * n
        elif logits == "none":
            flags = [False] * n
        else:
            flags = list(cast(Sequence[bool], logits))
        if sum(flags) > self.max_rows:
            raise ValueError(f"{sum(flags)} logits rows exceed this context's {self.max_rows}")
        b = self._batch
        base = self.n_past
        for i, tok in enumerate(tokens):
            b.token[i] = tok
            b.pos[i] = base + i
            b.logits[i] = flags[i]
        b.n_tokens = n
        rc = lib.llama_decode(self.ptr, b)
        if rc != 0:
            raise LocalspecError(f"llama_decode failed with code {rc} at position {base} ({n} tokens)")
        # On a GPU llama_decode returns once the work is queued: wait here, so that the pass's time is the pass's
        # (the cost model prices passes by it) instead of landing on whatever reads the first row.
        lib.llama_synchronize(self.ptr)
        self.tokens.extend(tokens)
        rows = sum(flags)
        spent = time.perf_counter() - t0
        self.shapes[(n, rows)] += 1
        self.decode_s += spent
        if self.on_decode is not None:
            self.on_decode(n, rows, spent)
        if self.tap is not None:
            self.tap.decoded(base, n)  # before the next decode overwrites the rows
        self._last = (base, list(tokens), flags)
        self._rollback_base = base
        self._tops = {}
        self._tops_kept = False

    # -- picking rows on the device ------------------------------------------------------------------------------
    def pick_on_device(self, k: int) -> bool:
        """From the next decode on, keep only each output row's k best tokens, picked by llama.cpp where the output
        layer runs (runtime/picks.py), and read them with top(); k=0: whole rows again. Returns whether rows are
        picked on the device: never where this context may not (ContextSettings.device_picks). Switching makes
        llama.cpp plan its graph again once; staying costs nothing."""
        k = k if self.can_pick_on_device else 0
        if (self._picks.k if self._picks is not None else 0) == k:
            return k > 0
        if self._picks is not None:
            self._picks.detach()
            self._picks = None
        if k > 0:
            self._picks = TopK(self.ptr, k)
        self._last, self._tops = None, {}  # the last batch's rows were read the other way
        return k > 0

    @property
    def picks_on_device(self) -> int:
        """How many best tokens each row keeps on the device (0: whole rows reach the host)."""
        return self._picks.k if self._picks is not None else 0

    def top(self, i: int = -1) -> tuple[list[int], list[float]] | None:
        """Batch row `i`'s best tokens and their logits, highest first (equal logits by token id), while rows are
        picked on the device; None otherwise, or where llama.cpp sampled nothing."""
        if self._picks is None:
            return None
        b = self._batch_index(i)
        if b not in self._tops:
            if self._tops_kept:
                raise LocalspecError(f"no logits for batch row {i}")
            self._tops[b] = self._picks.row(b)
        return self._tops[b]

    def _batch_index(self, i: int) -> int:
        if self._last is None:
            raise LocalspecError(f"no logits for batch row {i}: nothing decoded since the cache changed")
        flags = self._last[2]
        if i < 0:
            rows = [j for j, f in enumerate(flags) if f]
            if -i > len(rows):
                raise LocalspecError(f"no logits for batch row {i}")
            return rows[i]
        if i >= len(flags) or not flags[i]:
            raise LocalspecError(f"no logits for batch row {i}")
        return i

    def logits(self, i: int = -1) -> np.ndarray:
        """Logits of batch row `i` of the last decode, as a zero-copy float32 view (valid until the next decode).

        While rows are picked on the device llama.cpp keeps no whole rows: the row is computed again on a side
        sequence, at the cost of a single-token decode (counted in side_decodes), and returned as a copy."""
        if self._picks is not None:
            return self._side_row(i)
        ptr = lib.llama_get_logits_ith(self.ptr, i)
        if not ptr:
            raise LocalspecError(f"no logits for batch row {i}")
        return np.frombuffer(self._row_type.from_address(ctypes.addressof(ptr.contents)), dtype=np.float32)

    def _side_row(self, i: int) -> np.ndarray:
        """Row i of the last batch, decoded again on SIDE_SEQ: that sequence shares the cache's cells up to the row's
        token (a copy of seq 0's positions, no data moved), has no sampler, so llama.cpp returns its raw logits."""
        b = self._batch_index(i)
        assert self._last is not None and self._picks is not None  # _batch_index checked; logits() came here for it
        base, tokens, flags = self._last
        pos = base + b
        if self.tokens[pos:pos + 1] != [tokens[b]]:
            raise LocalspecError(f"no logits for batch row {i}: the cache changed since it was decoded")
        if not self._tops_kept:  # the side decode overwrites llama.cpp's sampled rows: keep them first
            for j, f in enumerate(flags):
                if f and j not in self._tops:
                    self._tops[j] = self._picks.row(j)
            self._tops_kept = True
        if self._side_batch is None:
            self._side_batch = lib.llama_batch_init(1, 0, 1)
            self._side_batch.n_seq_id[0] = 1
            self._side_batch.seq_id[0][0] = SIDE_SEQ
            self._side_batch.n_tokens = 1
            self._side_batch.logits[0] = True
        sb = self._side_batch
        sb.token[0], sb.pos[0] = tokens[b], pos
        lib.llama_memory_seq_rm(self.mem, SIDE_SEQ, -1, -1)
        lib.llama_memory_seq_cp(self.mem, 0, SIDE_SEQ, 0, pos)
        try:
            rc = lib.llama_decode(self.ptr, sb)
            if rc != 0:
                raise LocalspecError(f"llama_decode failed with code {rc} computing row {i} again at position {pos}")
            ptr = lib.llama_get_logits_ith(self.ptr, 0)
            if not ptr:
                raise LocalspecError(f"no logits for batch row {i} computed again")
            row = np.frombuffer(self._row_type.from_address(ctypes.addressof(ptr.contents)), dtype=np.float32).copy()
        finally:
            lib.llama_memory_seq_rm(self.mem, SIDE_SEQ, -1, -1)
        self.side_decodes += 1
        return row

    def truncate(self, n: int) -> None:
        """Roll back the KV cache to its first `n` tokens (rejected drafts leave no trace)."""
        if n >= self.n_past:
            return
        if n <= 0:
            self.clear()
            return
        snapshot = self._rollback_base is not None and n > self._rollback_base  # inside the last decode
        self._rollback_base = None
        if (self._snapshots and not snapshot) or not lib.llama_memory_seq_rm(self.mem, 0, n, -1):
            # Some caches (recurrent, trimmed sliding windows) cannot drop a suffix: rebuild from the prefix.
            keep = self.tokens[:n]
            self.clear()
            self.prefill(keep)
            return
        del self.tokens[n:]
        if self.tap is not None:
            self.tap.truncated(n)

    def clear(self) -> None:
        lib.llama_memory_clear(self.mem, True)
        self.tokens = []
        self._last = None
        self._rollback_base = None
        if self.tap is not None:
            self.tap.truncated(0)

    def common_prefix(self, tokens: Sequence[int]) -> int:
        n = 0
        for a, b in zip(self.tokens, tokens):
            if a != b:
                break
            n += 1
        return n

    def prefill(self, tokens: Sequence[int], *, logits_last: bool = True,
                progress: Progress | None = None) -> int:
        """Make the cache hold exactly `tokens`, reusing the longest cached prefix (or a saved prefix state, see
        runtime/prefixes.py); returns tokens evaluated. `last_prefill` says how the prompt got there.

        At least the last token is re-evaluated when `logits_last` so its logits are available. `progress(done,
        total)` hears how many of the tokens to evaluate are done: before the first batch and after each one (the
        batches then start small and double, so that a long prompt reports within a fraction of a second; how the
        prompt is split depends on its tokens only, never on timing: see FIRST_BATCH).
        """
        t0 = time.perf_counter()
        reused = keep = self.common_prefix(tokens)
        restored = 0
        store = self.prefixes
        if store is not None:
            hit = store.saved(tokens)
            if hit is not None and hit[0] - keep >= RESTORE_GAIN and self._restore(hit[1], tokens[:hit[0]]):
                store.used(hit[1])
                keep, reused, restored = hit[0], 0, hit[0]
        if logits_last and keep == len(tokens) and keep > 0:
            keep -= 1
            reused, restored = min(reused, keep), min(restored, keep)
        self.truncate(keep)
        save_at = store.unsaved(tokens, keep) if store is not None else None
        todo = len(tokens) - keep
        done, saved, size = 0, 0, self.n_batch if progress is None else min(self.n_batch, FIRST_BATCH)
        if progress is not None:
            progress(0, todo)
        while done < todo:
            start = keep + done
            end = min(start + size, len(tokens))
            if save_at is not None and start < save_at < end:
                end = save_at  # stop at the end of a wanted prefix: the cache holds exactly it while it is saved
            last = end == len(tokens)
            self.decode(tokens[start:end], "last" if (last and logits_last) else "none")
            done = end - keep
            if end == save_at and store is not None and self._save(store.path(tokens[:end]), store):
                saved = end
            if progress is not None:
                progress(done, todo)
                size = min(self.n_batch, size * 2)
        self.last_prefill = PrefillInfo(len(tokens), reused, restored, todo, time.perf_counter() - t0, saved)
        return todo

    # -- saved prefix states ------------------------------------------------------------------------------------
    def _save(self, path, store) -> bool:
        """Save what the cache holds (a whole wanted prefix) to `path` in runtime/state_files.py's checked format;
        a failure is noted, never raised."""
        if not store.writable():
            return False
        size = lib.llama_state_seq_get_size(self.ptr, 0)
        if not size or not store.room_for(len(self.tokens), size):
            return False
        buf = (ctypes.c_uint8 * size)()
        got = lib.llama_state_seq_get_data(self.ptr, buf, size, 0)
        if not got:
            store.error = "llama.cpp could not copy the prompt prefix's state"
            return False
        with memoryview(buf) as view:
            return store.write(path, self.tokens, view[:got])

    def _restore(self, path, expected: Sequence[int]) -> bool:
        """Load a saved prefix state into the (cleared) cache; False, with the cache empty, when the store refuses
        the file (damaged, foreign, planted or for other tokens: it is removed and said in one line) or llama.cpp
        cannot take it. The file is checked whole before llama.cpp sees it, and llama.cpp reads it from memory:
        its own file loader aborted the process on a truncated file."""
        store = self.prefixes
        self.clear()
        payload = store.read(path, expected) if store is not None else None
        if payload is None:
            return False
        data = (ctypes.c_uint8 * len(payload)).from_buffer(payload)
        read = lib.llama_state_seq_set_data(self.ptr, data, len(payload), 0)
        del data
        if read != len(payload):
            self.clear()
            if store is not None:
                store.refuse(path, "llama.cpp could not load it")
            return False
        self.tokens = list(expected)
        return True
