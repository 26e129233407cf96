"""Draft heads on llama.cpp: the head's own context, and the tap that keeps the target's hidden rows it reads.

A head drafts from the target's hidden states (speculative/heads/ holds the three drivers, ported from
vendor/llama.cpp/common/speculative.cpp):

    mtp     the model's own NextN block(s): pairs (token_p, h_{p-1}) where h is the target's last hidden state
            (`h_nextn`); a context of type MTP on the target model, or on an `mtp-*.gguf` beside it
    eagle3  a one-layer head on three target layers' inputs, encoded by its `fc`; its own GGUF
    dflash  a block drafter whose KV cache holds the target's layer inputs, fused; dspark: with a Markov head (its
            drafts report under the dflash origin)

llama.cpp's reference loop feeds each head every target batch as it is decoded (`process`). Here the target context
calls a `Tap` after each decode instead, which only copies the rows the head will read, by position; the head
catches up on them in one batched decode when it is next asked to draft. Why lazily: the hybrid asks a head only
where the schema, history and copies have no guess, and a head that sits out (priced out, or not needed for a long
tool call) then costs a row copy per target token instead of a decode. What the head drafts is the same either way:
the same (token, row) pairs at the same positions, only batched differently.

The tap's memory is bounded (MAX_TAP_BYTES): a head that sits out for thousands of tokens loses the oldest rows and
starts its cache again where its rows begin (as llama.cpp does for any context it never saw), never the output.
"""

from __future__ import annotations

import ctypes
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from localspec.errors import LocalspecError
from localspec.runtime import staging
from localspec.runtime.context import Context
from localspec.runtime.head_files import head_kind, read_header
from localspec.runtime.llama import lib
from localspec.runtime.model import Model, ModelSettings
from localspec.runtime.params import set_fields
from localspec.runtime.timing import steady_median, steady_state

MAX_TAP_BYTES = 128 << 20  # rows a sitting-out head may fall behind by: 128 MiB (2,730 EAGLE-3 rows of an 8B)
# Targets whose graph exposes layer inputs (llama.cpp sets t_layer_inp for these): EAGLE-3 and DFlash read them.
LAYER_INPUT_ARCHS = frozenset((
    "llama", "qwen3", "qwen3moe", "qwen35", "qwen35moe", "qwen3next", "gpt-oss", "gemma4", "lfm2", "mimo2",
    "minimax-01", "minimax-m2", "nemotron_h", "deepseek4", "bailingmoe3", "hunyuan-vl", "nanbeige", "muse-glimmer",
    "qwen4exp"))
HEAD_ORIGINS = {"mtp": "mtp", "eagle3": "eagle3", "dflash": "dflash", "dspark": "dflash"}


class HeadError(LocalspecError):
    """A head that cannot run with this target or build (one line, said at start-up)."""


class Tap:
    """The target rows a head reads, by position, copied after each target decode (Context.tap).

    `sources`: what makes up one row, in order: ("nextn",) for the target's last hidden state (MTP; EAGLE-3's id
    n_layer), ("layer", lid) for the input of target layer lid. Rows cover positions [lo, hi); `start` is where the
    current run of rows began (after a gap: a state restored from disk, or rows dropped for memory), and `low` the
    lowest position the target rolled back to since the head last looked."""

    def __init__(self, target: Context, sources: Sequence[tuple], n_embd: int):
        self.target = target
        self.sources = [tuple(s) for s in sources]
        self.n_embd = n_embd
        self.width = n_embd * len(self.sources)
        self.cap_rows = max(1024, MAX_TAP_BYTES // (4 * self.width))  # never fewer than two prompt batches
        self._buf = np.zeros((0, self.width), np.float32)
        self._off = 0  # position of _buf[0]
        self.lo = self.hi = self.start = 0
        self.low: int | None = 0
        self.copy_s = 0.0
        for s in self.sources:
            if s[0] == "nextn":
                staging.fn("llama_set_embeddings_nextn")(target.ptr, True, False)  # every row, not only logits rows
            else:
                staging.fn("llama_set_embeddings_layer_inp")(target.ptr, int(s[1]), True)

    def _read(self, src: tuple, n: int) -> np.ndarray:
        if src[0] == "nextn":
            ptr = staging.fn("llama_get_embeddings_nextn")(self.target.ptr)
        else:
            ptr = staging.fn("llama_get_embeddings_layer_inp")(self.target.ptr, int(src[1]))
        if not ptr:
            raise LocalspecError(f"llama.cpp kept no target rows for the head ({src[0]})")
        return np.ctypeslib.as_array(ptr, shape=(n, self.n_embd))

    def decoded(self, base: int, n: int) -> None:
        t0 = time.perf_counter()
        if base != self.hi:  # rows before `base` were never seen (a restored state): a new run starts here
            self.start = self.lo = self.hi = self._off = base
            self.low = base if self.low is None else min(self.low, base)
            self._buf = np.zeros((0, self.width), np.float32)
        end = base + n
        need = end - self._off
        if need > len(self._buf):
            if self.lo - self._off >= need // 2:  # room at the front: move down instead of growing
                keep = self._buf[self.lo - self._off:self.hi - self._off].copy()
                self._buf[:len(keep)] = keep
                self._off = self.lo
                need = end - self._off
            if need > len(self._buf):
                grown = np.zeros((max(need, 2 * len(self._buf), 64), self.width), np.float32)
                grown[:self.hi - self._off] = self._buf[:self.hi - self._off]
                self._buf = grown
        at = base - self._off
        for k, src in enumerate(self.sources):
            self._buf[at:at + n, k * self.n_embd:(k + 1) * self.n_embd] = self._read(src, n)
        self.hi = end
        if self.hi - self.lo > self.cap_rows:  # a head far behind loses the oldest rows, not the memory
            self.lo = self.start = self.hi - self.cap_rows
        self.copy_s += time.perf_counter() - t0

    def truncated(self, n: int) -> None:
        self.hi = min(self.hi, n)
        self.lo = min(self.lo, self.hi)
        self.start = min(self.start, self.hi)
        self.low = n if self.low is None else min(self.low, n)

    def rows(self, a: int, b: int) -> np.ndarray:
        """Rows of positions [a, b) (a view, valid until the next decode)."""
        if a < self.lo or b > self.hi:
            raise LocalspecError(f"head rows {a}..{b} not kept (have {self.lo}..{self.hi})")
        return self._buf[a - self._off:b - self._off]

    def take_low(self) -> int | None:
        """The fewest tokens the target rolled back to since the last call (None: it only grew)."""
        low, self.low = self.low, None
        return low

    def forget_before(self, pos: int) -> None:
        """Rows before `pos` are no longer needed (the head is past them)."""
        self.lo = max(self.lo, min(pos, self.hi))


@dataclass
class HeadInfo:
    """What a driver needs to know about its head, read once at load."""

    kind: str  # mtp | eagle3 | dflash | dspark
    path: Path
    n_embd: int  # the head's hidden size (its rows)
    n_embd_target: int
    n_vocab: int
    layer_ids: tuple[int, ...] = ()  # eagle3/dflash: the target layers read
    n_heads: int = 1  # mtp: NextN blocks (chained when > 1)
    block_size: int = 0  # dflash
    mask_token: int = -1  # dflash
    causal: bool = False  # dflash: attention inside the block
    selector_top_k: int = 0  # dflash2
    sample_from_anchor: bool = True  # dspark


@dataclass
class HeadContext:
    """The head's llama_context, batches of (token, row) pairs, and what its decodes cost."""

    ptr: Any
    n_batch: int
    n_vocab: int
    n_embd: int
    shapes: Counter = field(default_factory=Counter)  # (rows, logits rows) -> decodes
    decode_s: float = 0.0
    _batches: dict = field(default_factory=dict)

    @property
    def mem(self):
        return lib.llama_get_memory(self.ptr)

    def _batch(self, width: int, tokens: bool):
        key = (width, tokens)
        if key not in self._batches:
            b = lib.llama_batch_init(self.n_batch, width, 1)
            arr = None
            if width and tokens:  # llama_batch_init leaves token NULL when it allocates embd: give it an array
                arr = (ctypes.c_int32 * self.n_batch)()
                b.token = ctypes.cast(arr, ctypes.POINTER(ctypes.c_int32))
            for i in range(self.n_batch):
                b.n_seq_id[i] = 1
                b.seq_id[i][0] = 0
            self._batches[key] = (b, arr)
        return self._batches[key][0]

    def run(self, tokens: Sequence[int] | None, rows: np.ndarray | None, pos: Sequence[int] | int,
            logits: Sequence[bool] | bool = False, *, encode: bool = False) -> None:
        """One llama_decode (llama_encode) of `tokens` and/or embedding `rows` at positions `pos` (a start, or one
        each)."""
        n = len(tokens) if tokens is not None else len(rows)  # type: ignore[arg-type]
        if n == 0:
            return
        if n > self.n_batch:
            raise ValueError(f"head batch of {n} exceeds {self.n_batch}")
        width = rows.shape[1] if rows is not None else 0
        b = self._batch(width, tokens is not None)
        positions = range(pos, pos + n) if isinstance(pos, int) else pos
        flags = [logits] * n if isinstance(logits, bool) else list(logits)
        if rows is not None:
            np.ctypeslib.as_array(b.embd, shape=(self.n_batch * width,))[:n * width] = rows.reshape(-1)
        for i, p in enumerate(positions):
            if tokens is not None:
                b.token[i] = tokens[i]
            b.pos[i] = p
            b.logits[i] = flags[i]
        b.n_tokens = n
        t0 = time.perf_counter()
        rc = (lib.llama_encode if encode else lib.llama_decode)(self.ptr, b)
        if rc != 0:
            raise LocalspecError(f"head {'encode' if encode else 'decode'} failed with code {rc} ({n} rows)")
        lib.llama_synchronize(self.ptr)
        self.decode_s += time.perf_counter() - t0
        self.shapes[(n, sum(flags))] += 1

    def logits(self, i: int) -> np.ndarray:
        ptr = lib.llama_get_logits_ith(self.ptr, i)
        if not ptr:
            raise LocalspecError(f"no head logits for row {i}")
        return np.ctypeslib.as_array(ptr, shape=(self.n_vocab,))

    def nextn(self, i: int) -> np.ndarray:
        """The head's hidden row i of the last decode (a copy)."""
        ptr = staging.fn("llama_get_embeddings_nextn_ith")(self.ptr, i)
        if not ptr:
            raise LocalspecError(f"no head hidden row {i}")
        return np.ctypeslib.as_array(ptr, shape=(self.n_embd,)).copy()

    def nextn_all(self, n: int) -> np.ndarray:
        ptr = staging.fn("llama_get_embeddings_nextn")(self.ptr)
        if not ptr:
            raise LocalspecError("no head hidden rows")
        return np.ctypeslib.as_array(ptr, shape=(n, self.n_embd)).copy()

    def remove_from(self, pos: int) -> None:
        lib.llama_memory_seq_rm(self.mem, 0, pos, -1)

    def clear(self) -> None:
        lib.llama_memory_clear(self.mem, True)

    def pos_max(self) -> int:
        return lib.llama_memory_seq_pos_max(self.mem, 0)

    def close(self) -> None:
        for b, _arr in self._batches.values():
            if _arr is not None:
                b.token = ctypes.POINTER(ctypes.c_int32)()  # ours, not llama.cpp's to free
            lib.llama_batch_free(b)
        self._batches = {}
        if self.ptr:
            lib.llama_free(self.ptr)
            self.ptr = None


@dataclass
class LoadedHead:
    """A head ready to draft for a target context: its info, model (None: the target's own MTP layers), context and
    the tap on the target."""

    info: HeadInfo
    target: Context
    ctx: HeadContext
    tap: Tap
    model: Model | None = None
    step_s: float = 0.0  # one draft step in steady state, timed at load (warm_up)

    @property
    def kind(self) -> str:
        return self.info.kind

    @property
    def origin(self) -> str:
        return HEAD_ORIGINS[self.info.kind]

    def summary(self) -> dict:
        """What `run --json` and the bench say about the head: its kind, file, what it reads, its step's price."""
        info = self.info
        return {"kind": info.kind, "file": str(info.path), "target_layers": list(info.layer_ids) or None,
                "nextn_blocks": info.n_heads if info.kind == "mtp" else None,
                "block_size": info.block_size or None, "step_s": round(self.step_s, 6)}

    def close(self) -> None:
        if self.target.tap is self.tap:
            self.target.tap = None
        self.ctx.close()
        if self.model is not None:
            self.model.close()
            self.model = None


def _meta_int(model_ptr, key: str, default: int) -> int:
    buf = ctypes.create_string_buffer(64)
    if lib.llama_model_meta_val_str(model_ptr, key.encode(), buf, len(buf)) < 0:
        return default
    try:
        return int(buf.value)
    except ValueError:
        return default


def _meta_bool(model_ptr, key: str, default: bool) -> bool:
    buf = ctypes.create_string_buffer(16)
    if lib.llama_model_meta_val_str(model_ptr, key.encode(), buf, len(buf)) < 0:
        return default
    return buf.value == b"true"


def _arch(model_ptr) -> str:
    buf = ctypes.create_string_buffer(64)
    lib.llama_model_meta_val_str(model_ptr, b"general.architecture", buf, len(buf))
    return buf.value.decode("utf-8", "replace")


def target_mtp_layers(target: Model) -> int:
    """NextN blocks the target model loaded (0 unless it was loaded with load_mtp and has them)."""
    return max(0, int(lib.llama_model_n_layer_nextn(target.ptr))) if hasattr(lib, "llama_model_n_layer_nextn") else 0


def _check_build(kind: str) -> None:
    gone = staging.missing("mtp" if kind == "mtp" else "eagle3" if kind == "eagle3" else "dflash")
    if gone:
        raise HeadError(f"this llama.cpp build cannot run {kind} heads: it lacks {', '.join(gone)} "
                        "(llama-cpp-python 0.3.36 or later exports them)")


def _head_context(model_ptr, target: Context, *, mtp: bool, n_batch: int) -> HeadContext:
    threads = target.settings.n_threads or max(1, lib.llama_n_threads(target.ptr))
    params = set_fields(lib.llama_context_default_params(), n_ctx=target.n_ctx, n_batch=n_batch, n_ubatch=n_batch,
                        n_seq_max=1, n_rs_seq=0, n_threads=threads, n_threads_batch=threads, no_perf=True,
                        ctx_type=lib.LLAMA_CONTEXT_TYPE_MTP if mtp else lib.LLAMA_CONTEXT_TYPE_DEFAULT,
                        ctx_other=target.ptr, swa_full=True)
    ptr = lib.llama_init_from_model(model_ptr, params)
    if not ptr:
        raise HeadError("llama.cpp could not create the head's context")
    n_vocab = lib.llama_vocab_n_tokens(lib.llama_model_get_vocab(model_ptr))
    # Its hidden rows (h_nextn) are n_embd_out wide, whichever kind of head.
    return HeadContext(ptr, min(n_batch, lib.llama_n_batch(ptr)), n_vocab, lib.llama_model_n_embd_out(model_ptr))


def open_head(target: Context, path: str | Path | None = None, *, settings: ModelSettings = ModelSettings(),
              n_batch: int | None = None) -> LoadedHead:
    """The head in `path` (an EAGLE-3, DFlash or MTP GGUF), or the target's own MTP layers (path None: the target
    must have been loaded with ModelSettings(load_mtp=True)), set up to draft for `target`. HeadError (one line)
    when the build, the target or the file cannot do it."""
    tmodel = target.model
    n_batch = n_batch or target.n_batch
    n_embd_t = lib.llama_model_n_embd(tmodel.ptr)
    n_layer_t = lib.llama_model_n_layer(tmodel.ptr)
    if path is None:
        n_heads = target_mtp_layers(tmodel)
        if not n_heads:
            raise HeadError(f"{tmodel.path.name} has no MTP layers loaded")
        _check_build("mtp")
        ctx = _head_context(tmodel.ptr, target, mtp=True, n_batch=n_batch)
        info = HeadInfo("mtp", tmodel.path, ctx.n_embd, n_embd_t, ctx.n_vocab, n_heads=n_heads)
        return _attach(info, target, ctx, None, [("nextn",)], lib.llama_model_n_embd_out(tmodel.ptr))
    p = Path(path)
    header = read_header(p)
    kind = head_kind(header)
    if kind is None:
        raise HeadError(f"{p.name} is not a draft head (no eagle3/dflash architecture, no MTP layers)")
    if header.arch == "gemma4-assistant":
        raise HeadError(f"{p.name}: Gemma 4 assistant heads (MTP sharing the target's KV cache) are not supported yet")
    _check_build(kind)
    model = Model(p, ModelSettings(n_gpu_layers=settings.n_gpu_layers, device=settings.device,
                                   use_mmap=settings.use_mmap, load_mtp=kind == "mtp"))
    try:
        return _open_file_head(kind, p, model, target, n_batch, n_embd_t, n_layer_t)
    except BaseException:
        model.close()
        raise


def _open_file_head(kind: str, p: Path, model: Model, target: Context, n_batch: int, n_embd_t: int,
                    n_layer_t: int) -> LoadedHead:
    tarch = _arch(target.model.ptr)
    if kind == "mtp":
        n_heads = target_mtp_layers(model)
        if not n_heads:
            raise HeadError(f"{p.name}: llama.cpp loaded no MTP layers from it")
        if lib.llama_model_n_embd_out(model.ptr) != lib.llama_model_n_embd_out(target.model.ptr):
            raise HeadError(f"{p.name}: its rows are not {target.model.path.name}'s width")
        ctx = _head_context(model.ptr, target, mtp=True, n_batch=n_batch)
        info = HeadInfo("mtp", p, ctx.n_embd, n_embd_t, ctx.n_vocab, n_heads=n_heads)
        return _attach(info, target, ctx, model, [("nextn",)], lib.llama_model_n_embd_out(target.model.ptr))
    if tarch not in LAYER_INPUT_ARCHS:
        raise HeadError(f"{kind} heads read target layer inputs, which llama.cpp's {tarch} graph does not expose")
    ids_n = staging.fn("llama_model_target_layer_ids_n")(model.ptr)
    ids_p = staging.fn("llama_model_target_layer_ids")(model.ptr)
    ids = tuple(int(ids_p[i]) for i in range(ids_n))
    if kind == "eagle3" and len(ids) != 3:
        raise HeadError(f"{p.name}: an EAGLE-3 head reads 3 target layers, this one {len(ids)}")
    # EAGLE-3 reads id n_layer as the target's last hidden state (h_nextn); DFlash reads every id as a layer input,
    # and llama.cpp's graphs have none past the last layer (a GGML_ASSERT abort, not an error code).
    top = n_layer_t if kind == "eagle3" else n_layer_t - 1
    if not ids or any(i < 0 or i > top for i in ids):
        raise HeadError(f"{p.name}: target layers {list(ids)} do not fit {target.model.path.name}'s {n_layer_t}")
    n_embd_head = lib.llama_model_n_embd(model.ptr)
    ctx = _head_context(model.ptr, target, mtp=False, n_batch=n_batch)
    if ctx.n_vocab != target.model.n_vocab:
        raise HeadError(f"{p.name}: its vocabulary ({ctx.n_vocab}) is not the target's ({target.model.n_vocab})")
    if kind == "eagle3":
        info = HeadInfo("eagle3", p, n_embd_head, n_embd_t, ctx.n_vocab, layer_ids=ids)
        sources = [("nextn",) if i == n_layer_t else ("layer", i) for i in ids]
    else:
        block = _meta_int(model.ptr, "dflash.block_size", 16)
        info = HeadInfo(kind, p, n_embd_head, n_embd_t, ctx.n_vocab, layer_ids=ids, block_size=block,
                        mask_token=int(lib.llama_vocab_mask(lib.llama_model_get_vocab(model.ptr))),
                        causal=_meta_bool(model.ptr, "dflash.attention.causal", False),
                        selector_top_k=int(staging.fn("llama_model_dflash_selector_top_k")(model.ptr)),
                        sample_from_anchor=_meta_bool(model.ptr, "dflash.sample_from_anchor", True))
        if info.mask_token < 0:
            raise HeadError(f"{p.name}: a DFlash drafter needs tokenizer.ggml.mask_token_id")
        if info.selector_top_k > 0:
            raise HeadError(f"{p.name}: DFlash2 selector heads are not supported yet")
        sources = [("layer", i) for i in ids]
        lib.llama_set_causal_attn(ctx.ptr, info.causal)
    return _attach(info, target, ctx, model, sources, n_embd_t)


def _attach(info: HeadInfo, target: Context, ctx: HeadContext, model: Model | None, sources, n_embd_rows: int
            ) -> LoadedHead:
    if target.tap is not None:
        ctx.close()
        raise HeadError("the target already feeds a head: one head per target context")
    # The head's own hidden rows: the pre-norm output EAGLE-3 chains, MTP's h, DFlash2's lattice (masked: only the
    # rows that asked for logits).
    staging.fn("llama_set_embeddings_nextn")(ctx.ptr, True, info.selector_top_k == 0)
    tap = Tap(target, sources, n_embd_rows)
    target.tap = tap
    return LoadedHead(info, target, ctx, tap, model)


def warm_up(head: LoadedHead, max_steps: int = 12) -> float:
    """One draft step of the head in steady state (what a drafted token costs it, before any is measured): a
    single-row decode for MTP and EAGLE-3, a whole block for DFlash (its one decode per draft), on a throwaway
    cache. As runtime/pair.py's warm_up for a draft model, and for the same reason."""
    ctx, info = head.ctx, head.info
    zeros = np.zeros((1, info.n_embd), np.float32)
    tok = max(0, head.target.model.bos)
    if info.kind in ("dflash", "dspark"):
        n = max(2, min(info.block_size, ctx.n_batch))
        block = [tok] + [info.mask_token] * (n - 1)

        def step() -> float:
            t0 = time.perf_counter()
            ctx.run(block, None, 0, True)
            spent = time.perf_counter() - t0
            ctx.clear()
            return spent
    else:
        pos = [0]

        def step() -> float:
            t0 = time.perf_counter()
            ctx.run([tok], zeros, pos[0], True)
            pos[0] += 1
            return time.perf_counter() - t0
    try:
        times = steady_state(step, max_steps=max_steps)
    finally:
        ctx.clear()
        ctx.shapes.clear()
        ctx.decode_s = 0.0
    head.step_s = steady_median(times) if times else 0.0
    return head.step_s
