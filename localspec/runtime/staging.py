"""llama.cpp's staging API for draft heads (vendor/llama.cpp/src/llama-ext.h), resolved once by candidate names.

Why by candidate names: llama-ext.h declares these functions LLAMA_API outside `extern "C"`, so libllama exports
them under C++-mangled names (Itanium on Linux and macOS, MSVC on Windows), and a later llama.cpp may give them C
names. llama-cpp-python's own llama_cpp_ext.py resolves the nextn ones the same way and wraps nothing else; the
layer-input, target-layer and DFlash selector functions EAGLE-3 and DFlash need are bound here.

Resolved at import, never raising: a build that lacks a symbol gets `None` for it, `missing(kind)` names what a head
kind needs and the build lacks, and `localspec doctor` and the stats panel say so plainly (a header marked "breaking
changes allowed" may drop or rename any of them).
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any

from localspec.runtime.llama import lib

_lib = lib.llama_cpp._lib
_vp = ctypes.c_void_p
_f32p = ctypes.POINTER(ctypes.c_float)


@dataclass(frozen=True)
class Symbol:
    name: str  # as llama-ext.h declares it
    names: tuple[str, ...]  # the exported names tried, in order: C, Itanium, MSVC
    argtypes: tuple[Any, ...]
    restype: Any


SYMBOLS = (
    Symbol("llama_set_embeddings_nextn",
           ("llama_set_embeddings_nextn", "_Z26llama_set_embeddings_nextnP13llama_contextbb",
            "?llama_set_embeddings_nextn@@YAXPEAUllama_context@@_N1@Z"), (_vp, ctypes.c_bool, ctypes.c_bool), None),
    Symbol("llama_get_embeddings_nextn",
           ("llama_get_embeddings_nextn", "_Z26llama_get_embeddings_nextnP13llama_context",
            "?llama_get_embeddings_nextn@@YAPEAMPEAUllama_context@@@Z"), (_vp,), _f32p),
    Symbol("llama_get_embeddings_nextn_ith",
           ("llama_get_embeddings_nextn_ith", "_Z30llama_get_embeddings_nextn_ithP13llama_contexti",
            "?llama_get_embeddings_nextn_ith@@YAPEAMPEAUllama_context@@H@Z"), (_vp, ctypes.c_int32), _f32p),
    Symbol("llama_set_nextn_layer_offset",
           ("llama_set_nextn_layer_offset", "_Z28llama_set_nextn_layer_offsetP13llama_contexti",
            "?llama_set_nextn_layer_offset@@YAXPEAUllama_context@@H@Z"), (_vp, ctypes.c_int32), None),
    Symbol("llama_set_embeddings_layer_inp",
           ("llama_set_embeddings_layer_inp", "_Z30llama_set_embeddings_layer_inpP13llama_contextjb",
            "?llama_set_embeddings_layer_inp@@YAXPEAUllama_context@@I_N@Z"), (_vp, ctypes.c_uint32, ctypes.c_bool),
           None),
    Symbol("llama_get_embeddings_layer_inp",
           ("llama_get_embeddings_layer_inp", "_Z30llama_get_embeddings_layer_inpP13llama_contextj",
            "?llama_get_embeddings_layer_inp@@YAPEAMPEAUllama_context@@I@Z"), (_vp, ctypes.c_uint32), _f32p),
    Symbol("llama_model_target_layer_ids",
           ("llama_model_target_layer_ids", "_Z28llama_model_target_layer_idsPK11llama_model",
            "?llama_model_target_layer_ids@@YAPEBHPEBUllama_model@@@Z"), (_vp,), ctypes.POINTER(ctypes.c_int32)),
    Symbol("llama_model_target_layer_ids_n",
           ("llama_model_target_layer_ids_n", "_Z30llama_model_target_layer_ids_nPK11llama_model",
            "?llama_model_target_layer_ids_n@@YAIPEBUllama_model@@@Z"), (_vp,), ctypes.c_uint32),
    Symbol("llama_model_dflash_selector_top_k",
           ("llama_model_dflash_selector_top_k", "_Z33llama_model_dflash_selector_top_kPK11llama_model",
            "?llama_model_dflash_selector_top_k@@YAHPEBUllama_model@@@Z"), (_vp,), ctypes.c_int32),
)

# What each head kind calls (speculative/heads/): a build without one of them cannot run that kind.
NEEDS = {
    "mtp": ("llama_set_embeddings_nextn", "llama_get_embeddings_nextn", "llama_get_embeddings_nextn_ith",
            "llama_set_nextn_layer_offset"),
    "eagle3": ("llama_set_embeddings_nextn", "llama_get_embeddings_nextn", "llama_get_embeddings_nextn_ith",
               "llama_set_embeddings_layer_inp", "llama_get_embeddings_layer_inp", "llama_model_target_layer_ids",
               "llama_model_target_layer_ids_n"),
    "dflash": ("llama_set_embeddings_nextn", "llama_get_embeddings_nextn", "llama_set_embeddings_layer_inp",
               "llama_get_embeddings_layer_inp",
               "llama_model_target_layer_ids", "llama_model_target_layer_ids_n",
               "llama_model_dflash_selector_top_k"),
}
# Public-API fields and functions the heads need besides (llama.h: present in the bindings llama-cpp-python ships
# since the heads landed; a binding without them would fail at set_fields with a clearer message than ctypes').
PUBLIC = ("llama_model_n_layer_nextn", "llama_model_n_embd_out", "llama_set_causal_attn", "llama_vocab_mask",
          "llama_n_rs_seq", "LLAMA_CONTEXT_TYPE_MTP")


def _resolve(sym: Symbol) -> Any:
    for name in sym.names:
        fn = getattr(_lib, name, None)
        if fn is not None:
            fn.argtypes = list(sym.argtypes)
            fn.restype = sym.restype
            return fn
    return None


FUNCS: dict[str, Any] = {s.name: _resolve(s) for s in SYMBOLS}
EXPORTED: dict[str, str | None] = {s.name: next((n for n in s.names if hasattr(_lib, n)), None) for s in SYMBOLS}


def missing(kind: str | None = None) -> list[str]:
    """The staging and public names a head kind needs (every kind's, for None) that this build lacks."""
    wanted = NEEDS[kind] if kind is not None else tuple(dict.fromkeys(n for v in NEEDS.values() for n in v))
    gone = [n for n in wanted if FUNCS.get(n) is None]
    return gone + [n for n in PUBLIC if not hasattr(lib, n)]


def fn(name: str) -> Any:
    """The bound function `name` (a head checks `missing(kind)` before it calls any)."""
    f = FUNCS[name]
    if f is None:
        raise AttributeError(f"this llama.cpp build exports no {name}")
    return f


def report() -> dict[str, Any]:
    """For `localspec doctor`: which staging symbol was found under which exported name, and which head kinds this
    build can run."""
    return {"symbols": dict(EXPORTED), "kinds": {k: not missing(k) for k in NEEDS},
            "missing": missing()}
