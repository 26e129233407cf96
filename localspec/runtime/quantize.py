"""Requantize a GGUF with llama.cpp's own quantizer (F16 copies for exactness checks, Q2_K/Q3_K drafts)."""

from __future__ import annotations

import os
from pathlib import Path

from localspec.errors import LocalspecError
from localspec.runtime import llama
from localspec.runtime.llama import lib
from localspec.runtime.model import check_gguf_file
from localspec.runtime.params import set_fields

FTYPES = {
    "F32": lib.LLAMA_FTYPE_ALL_F32,
    "F16": lib.LLAMA_FTYPE_MOSTLY_F16,
    "Q8_0": lib.LLAMA_FTYPE_MOSTLY_Q8_0,
    "Q4_0": lib.LLAMA_FTYPE_MOSTLY_Q4_0,
    "Q4_K_M": lib.LLAMA_FTYPE_MOSTLY_Q4_K_M,
    "Q3_K_M": lib.LLAMA_FTYPE_MOSTLY_Q3_K_M,
    "Q2_K": lib.LLAMA_FTYPE_MOSTLY_Q2_K,
}


def quantize(src: str | os.PathLike, dst: str | os.PathLike, ftype: str, *, threads: int = 0) -> Path:
    src_path = check_gguf_file(src)
    if ftype not in FTYPES:
        raise LocalspecError(f"unknown quantization type {ftype!r}; choose one of {', '.join(FTYPES)}")
    llama.init()
    dst_path = Path(dst)
    tmp = dst_path.with_name(dst_path.name + ".part")
    params = set_fields(lib.llama_model_quantize_default_params(), ftype=FTYPES[ftype], allow_requantize=True,
                        nthread=threads)
    rc = lib.llama_model_quantize(str(src_path).encode(), str(tmp).encode(), params)
    if rc != 0:
        tmp.unlink(missing_ok=True)
        raise LocalspecError(f"quantizing {src_path.name} to {ftype} failed (code {rc})")
    os.replace(tmp, dst_path)  # never leave a half-written model under the final name
    return dst_path
