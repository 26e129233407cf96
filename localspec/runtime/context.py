"""Inference state over a Model: KV cache, batched decode, logits rows, rollback."""

from __future__ import annotations

import ctypes
import os
import time
from collections import Counter
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from localspec.errors import ContextOverflowError, LocalspecError
from localspec.runtime.llama import lib
from localspec.runtime.model import Model
from localspec.runtime.params import set_fields
from localspec.runtime.prefixes import PrefillInfo, PrefixStore

Progress = Callable[[int, int], None]  # (tokens evaluated so far, tokens to evaluate)
FIRST_BATCH = 64  # with a progress callback: the first batch reports early ...
BATCH_S = 0.25  # ... and later ones are sized to take about this long
RESTORE_GAIN = 32  # tokens a saved prefix must add over the cache's own reuse to be worth reading from disk

FLASH_ATTN = {"auto": lib.LLAMA_FLASH_ATTN_TYPE_AUTO, "on": lib.LLAMA_FLASH_ATTN_TYPE_ENABLED,
              "off": lib.LLAMA_FLASH_ATTN_TYPE_DISABLED}


def default_threads() -> int:
    return max(1, min(8, os.cpu_count() or 1))


@dataclass(frozen=True)
class ContextSettings:
    n_ctx: int = 4096
    n_batch: int = 512
    n_threads: int = 0  # 0: one per core, up to 8
    flash_attn: str = "auto"  # auto | on | off
    swa_full: bool = True  # keep the whole sliding-window cache so rollback and prefix reuse stay exact


class Context:
    """One sequence (seq 0) on a model. `tokens` mirrors what is in the KV cache, position by position."""

    def __init__(self, model: Model, settings: ContextSettings = ContextSettings()):
        if settings.flash_attn not in FLASH_ATTN:
            raise LocalspecError(f"flash_attn must be one of {', '.join(FLASH_ATTN)}, not {settings.flash_attn!r}")
        self.model = model
        self.settings = settings
        n_ctx = min(settings.n_ctx, model.n_ctx_train) if model.n_ctx_train > 0 else settings.n_ctx
        threads = settings.n_threads or default_threads()
        params = set_fields(lib.llama_context_default_params(), n_ctx=n_ctx, n_batch=settings.n_batch,
                            n_ubatch=settings.n_batch, n_seq_max=1, n_threads=threads, n_threads_batch=threads,
                            flash_attn_type=FLASH_ATTN[settings.flash_attn], swa_full=settings.swa_full, no_perf=True)
        ptr = lib.llama_init_from_model(model.ptr, params)
        if not ptr:
            raise LocalspecError(f"llama.cpp could not create a context of {n_ctx} tokens for {model.path.name}")
        self.ptr = ptr
        self.n_ctx = lib.llama_n_ctx(ptr)
        # llama.cpp clamps the batch to the window; sending more than it kept would trip a GGML_ASSERT.
        self.n_batch = min(settings.n_batch, lib.llama_n_batch(ptr), lib.llama_n_ubatch(ptr), self.n_ctx)
        self.mem = lib.llama_get_memory(ptr)
        self.tokens: list[int] = []
        self.prefixes: PrefixStore | None = None  # saved prompt prefixes (launch/open sets it up)
        self.last_prefill = PrefillInfo()
        # Every decode's shape, (tokens, logits rows) -> count, and the seconds spent in decode(): what a cost
        # profile prices when projecting a run onto another machine (speculative/profile.py).
        self.shapes: Counter[tuple[int, int]] = Counter()
        self.decode_s = 0.0
        self._batch = lib.llama_batch_init(self.n_batch, 0, 1)
        self._n_vocab = model.n_vocab
        self._row_type = ctypes.c_float * model.n_vocab  # one logits row, viewed in place (no copy)
        for i in range(self.n_batch):  # one sequence: seq ids never change, so set them once
            self._batch.n_seq_id[i] = 1
            self._batch.seq_id[i][0] = 0

    def close(self) -> None:
        if getattr(self, "ptr", None):
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
            flags = list(logits)
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
        self.tokens.extend(tokens)
        self.shapes[(n, sum(flags))] += 1
        self.decode_s += time.perf_counter() - t0

    def logits(self, i: int = -1) -> np.ndarray:
        """Logits of batch row `i` of the last decode, as a zero-copy float32 view (valid until the next decode)."""
        ptr = lib.llama_get_logits_ith(self.ptr, i)
        if not ptr:
            raise LocalspecError(f"no logits for batch row {i}")
        return np.frombuffer(self._row_type.from_address(ctypes.addressof(ptr.contents)), dtype=np.float32)

    def truncate(self, n: int) -> None:
        """Roll back the KV cache to its first `n` tokens (rejected drafts leave no trace)."""
        if n >= self.n_past:
            return
        if n <= 0:
            self.clear()
            return
        if not lib.llama_memory_seq_rm(self.mem, 0, n, -1):
            # Some caches (recurrent, trimmed sliding windows) cannot drop a suffix: rebuild from the prefix.
            keep = self.tokens[:n]
            self.clear()
            self.prefill(keep)
            return
        del self.tokens[n:]

    def clear(self) -> None:
        lib.llama_memory_clear(self.mem, True)
        self.tokens = []

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
        batches then start small and grow, so that a long prompt reports within a fraction of a second).
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
            t_batch = time.perf_counter()
            self.decode(tokens[start:end], "last" if (last and logits_last) else "none")
            done = end - keep
            if end == save_at and self._save(store.path(tokens[:end]), store):
                saved = end
            if progress is not None:
                progress(done, todo)
                spent = time.perf_counter() - t_batch
                if spent > 0:  # aim at BATCH_S per batch, within n_batch
                    size = max(16, min(self.n_batch, int((end - start) * BATCH_S / spent)))
        self.last_prefill = PrefillInfo(len(tokens), reused, restored, todo, time.perf_counter() - t0, saved)
        return todo

    # -- saved prefix states ------------------------------------------------------------------------------------
    def _save(self, path, store) -> bool:
        """Save what the cache holds (a whole wanted prefix) to `path`; a failure is noted, never raised."""
        if not store.writable():
            return False
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        arr = (lib.llama_token * len(self.tokens))(*self.tokens)
        try:
            ok = lib.llama_state_seq_save_file(self.ptr, str(tmp).encode(), 0, arr, len(self.tokens)) > 0
            if ok:
                os.chmod(tmp, 0o600)
                os.replace(tmp, path)  # whole or absent: another process never reads half a file
        except OSError as exc:
            ok = False
            store.error = f"cannot save a prompt prefix to {path}: {exc.strerror or exc}"
        finally:
            if tmp.exists():
                tmp.unlink(missing_ok=True)
        if ok:
            store.prune()
        return ok

    def _restore(self, path, expected: Sequence[int]) -> bool:
        """Load a saved prefix state into the (cleared) cache; False, with the cache empty, when the file is
        unreadable or holds other tokens than `expected` (it is then deleted: it would never match)."""
        cap = len(expected)
        arr = (lib.llama_token * cap)()
        n_out = ctypes.c_size_t(0)
        self.clear()
        try:
            read = lib.llama_state_seq_load_file(self.ptr, str(path).encode(), 0, arr, cap, ctypes.byref(n_out))
        except OSError:
            read = 0
        if read and n_out.value == cap and list(arr[:cap]) == list(expected):
            self.tokens = list(expected)
            return True
        self.clear()
        try:
            path.unlink()
        except OSError:
            pass
        return False

    def set_threads(self, n: int) -> None:
        lib.llama_set_n_threads(self.ptr, n, n)
