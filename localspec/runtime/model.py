"""A loaded GGUF model: weights, vocabulary, tokenizer and metadata (no inference state)."""

from __future__ import annotations

import ctypes
import os
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from localspec.errors import LocalspecError, ModelFileError
from localspec.runtime import llama
from localspec.runtime.llama import lib
from localspec.runtime.params import set_fields
from localspec.runtime.placement import placement

GGUF_MAGIC = b"GGUF"
_LOAD_MODE = {None: lib.LLAMA_LOAD_MODE_AUTO, True: lib.LLAMA_LOAD_MODE_MMAP, False: lib.LLAMA_LOAD_MODE_NONE}


@dataclass(frozen=True)
class ModelSettings:
    """Per-model load settings; target and draft each get their own."""

    # None: every layer on the GPU when the build can offload (CUDA, Metal, ...), else the CPU; -1: every layer;
    # 0: the CPU. One default for every command, the app and the benchmarks (offload_layers).
    n_gpu_layers: int | None = None
    # True: map the file (llama.cpp's load_mode MMAP); False: read it into memory (NONE); None: llama.cpp picks by
    # device (AUTO, its own default).
    use_mmap: bool | None = None
    vocab_only: bool = False
    # A ggml device name ("CUDA0", "Metal"; `localspec doctor` lists them): offloaded layers go to that device
    # alone. None: llama.cpp spreads them over every GPU it finds.
    device: str | None = None
    # Load the model's MTP (NextN) layers too, for drafting with them (runtime/heads.py); off, llama.cpp skips them.
    load_mtp: bool = False


def gpu_offload_supported() -> bool:
    llama.init()
    return bool(lib.llama_supports_gpu_offload())


def offload_layers(n_gpu_layers: int | None) -> int:
    """The layer count llama.cpp gets: all (a number above any model's) for -1, or for None where the build can
    offload; else the number asked for."""
    if n_gpu_layers is None:
        return 1_000_000 if gpu_offload_supported() else 0
    return 1_000_000 if n_gpu_layers < 0 else n_gpu_layers


def device_handle(name: str) -> int:
    """The ggml device called `name` (as `localspec doctor` lists them), or a one-line error naming those there are."""
    from localspec.runtime.build_info import device_handles

    handles = device_handles()
    if name not in handles:
        raise LocalspecError(f"no llama.cpp device {name!r} in this build (devices: {', '.join(handles) or 'none'})")
    return handles[name]


def check_gguf_file(path: str | os.PathLike) -> Path:
    """Fail with a one-line error unless `path` is a readable GGUF file (llama.cpp would only log and return NULL)."""
    p = Path(path).expanduser()
    if not p.exists():
        raise ModelFileError(f"model file not found: {p}")
    if not p.is_file():
        raise ModelFileError(f"model path is not a file: {p}")
    try:
        with p.open("rb") as fh:
            magic = fh.read(4)
    except OSError as exc:
        raise ModelFileError(f"cannot read model file {p}: {exc.strerror}") from None
    if magic != GGUF_MAGIC:
        raise ModelFileError(f"not a GGUF file (bad magic {magic!r}): {p}")
    return p


class Model:
    """Owns a llama_model. Tokenisation and vocabulary queries live here; decoding lives in Context."""

    def __init__(self, path: str | os.PathLike, settings: ModelSettings = ModelSettings()):
        self.path = check_gguf_file(path)
        self.settings = settings
        llama.init()
        params = set_fields(lib.llama_model_default_params(), n_gpu_layers=offload_layers(settings.n_gpu_layers),
                            load_mode=_LOAD_MODE[settings.use_mmap],
                            vocab_only=settings.vocab_only, load_mtp=settings.load_mtp)
        devices = None
        if settings.device is not None:
            # A NULL-terminated array of ggml devices; kept alive until the load returns.
            devices = (ctypes.c_void_p * 2)(device_handle(settings.device), None)
            set_fields(params, devices=ctypes.addressof(devices))
        with llama.capture() as log:
            ptr = lib.llama_model_load_from_file(str(self.path).encode(), params)
        if not ptr:
            raise ModelFileError(f"llama.cpp could not load {self.path} (corrupt, truncated or unsupported GGUF)")
        self.ptr = ptr
        # Which device holds how many layers ({"layers": {"CUDA0": 25}, ...}: runtime/placement.py).
        self.placement = placement("".join(log), lib.llama_model_n_layer(ptr))
        self.vocab = lib.llama_model_get_vocab(ptr)
        self.n_vocab = lib.llama_vocab_n_tokens(self.vocab)
        self.bos = lib.llama_vocab_bos(self.vocab)
        self.eos = lib.llama_vocab_eos(self.vocab)
        self.add_bos = bool(lib.llama_vocab_get_add_bos(self.vocab))
        self.add_eos = bool(lib.llama_vocab_get_add_eos(self.vocab))
        self.vocab_type = lib.llama_vocab_type(self.vocab)
        self.n_ctx_train = lib.llama_model_n_ctx_train(ptr)
        self._piece_cache: dict[int, bytes] = {}

    def close(self) -> None:
        if getattr(self, "ptr", None):
            lib.llama_model_free(self.ptr)
            self.ptr = None

    def __del__(self):  # pragma: no cover - interpreter shutdown order varies
        try:
            self.close()
        except Exception:
            pass

    @property
    def name(self) -> str:
        return self.meta("general.name") or self.path.stem

    def meta(self, key: str) -> str | None:
        buf = ctypes.create_string_buffer(1 << 16)
        n = lib.llama_model_meta_val_str(self.ptr, key.encode(), buf, len(buf))
        if n < 0:
            return None
        if n >= len(buf):  # long values (chat templates) need a bigger buffer
            buf = ctypes.create_string_buffer(n + 1)
            lib.llama_model_meta_val_str(self.ptr, key.encode(), buf, len(buf))
        return buf.value.decode("utf-8", "replace")

    @cached_property
    def chat_template(self) -> str | None:
        raw = lib.llama_model_chat_template(self.ptr, None)
        return raw.decode("utf-8", "replace") if raw else None

    @cached_property
    def eog_tokens(self) -> frozenset[int]:
        return frozenset(t for t in range(self.n_vocab) if lib.llama_vocab_is_eog(self.vocab, t))

    def is_eog(self, token: int) -> bool:
        # Asked of every emitted token: one call, not the whole set (eog_tokens asks each of the vocabulary's
        # 262k tokens, 0.1-0.3 s that a first generation would pay).
        return bool(lib.llama_vocab_is_eog(self.vocab, token))

    def tokenize(self, text: str, *, add_special: bool | None = None, parse_special: bool = True) -> list[int]:
        """Text to token ids; add_special defaults to the model's own BOS rule."""
        data = text.encode("utf-8")
        add = self.add_bos if add_special is None else add_special
        cap = len(data) + 16
        buf = (lib.llama_token * cap)()
        n = lib.llama_tokenize(self.vocab, data, len(data), buf, cap, add, parse_special)
        if n < 0:
            cap = -n
            buf = (lib.llama_token * cap)()
            n = lib.llama_tokenize(self.vocab, data, len(data), buf, cap, add, parse_special)
        return list(buf[:n])

    def token_bytes(self, token: int, *, special: bool = True) -> bytes:
        """The raw bytes of one token (may be part of a multi-byte character); cached per token."""
        cached = self._piece_cache.get(token) if special else None
        if cached is not None:
            return cached
        buf = ctypes.create_string_buffer(64)
        n = lib.llama_token_to_piece(self.vocab, token, buf, len(buf), 0, special)
        if n < 0:
            buf = ctypes.create_string_buffer(-n)
            n = lib.llama_token_to_piece(self.vocab, token, buf, len(buf), 0, special)
        out = buf.raw[:n]
        if special:
            self._piece_cache[token] = out
        return out

    def detokenize(self, tokens: list[int], *, special: bool = False) -> str:
        cap = max(64, len(tokens) * 16)
        arr = (lib.llama_token * len(tokens))(*tokens)
        buf = ctypes.create_string_buffer(cap)
        n = lib.llama_detokenize(self.vocab, arr, len(tokens), buf, cap, False, special)
        if n < 0:
            cap = -n
            buf = ctypes.create_string_buffer(cap)
            n = lib.llama_detokenize(self.vocab, arr, len(tokens), buf, cap, False, special)
        return buf.raw[:n].decode("utf-8", "replace")

    def token_text(self, token: int) -> str:
        """The vocabulary entry as stored in the GGUF (used for compatibility checks)."""
        raw = lib.llama_vocab_get_text(self.vocab, token)
        return raw.decode("utf-8", "replace") if raw else ""
