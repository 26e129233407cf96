"""Which draft head a GGUF file is, read from its header alone (no weights loaded).

The rules are llama.cpp's own (common_speculative_types_from_gguf in vendor/llama.cpp/common/speculative.cpp), plus
EAGLE-3, which llama.cpp never infers but whose files say so plainly:

    general.architecture == "eagle3"                         EAGLE-3 head (reads three target layers)
    general.architecture == "dflash", tensor markov_w1.weight DSpark (DFlash with a Markov head)
    general.architecture == "dflash"                          DFlash block drafter
    tensor blk.{block_count-1}.nextn.eh_proj.weight           MTP layers (in a model, or an mtp-*.gguf beside it)

Why a reader of our own and not gguf's GGUFReader: that one builds every field and tensor record up front, which
took about a minute for Qwen2's 152k-token vocabulary on the 2-core development machine (benchmarks/gpu/mkrand.py);
this one skips array contents with seeks and keeps only the scalar keys and the tensor names (milliseconds).
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from localspec.errors import ModelFileError

KINDS = ("mtp", "eagle3", "dflash", "dspark")
# GGUF value types (gguf.h): their sizes, for the fixed-width ones.
_FIXED = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
_FMT = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9
_MAX_ITEMS = 1 << 26  # more keys, tensors or array items than any real file has: a corrupt header


@dataclass
class GGUFHeader:
    keys: dict[str, object] = field(default_factory=dict)  # scalar keys (arrays kept only when short)
    tensors: set[str] = field(default_factory=set)

    @property
    def arch(self) -> str:
        return str(self.keys.get("general.architecture", ""))


def _read(f: BinaryIO, fmt: str):
    size = struct.calcsize(fmt)
    data = f.read(size)
    if len(data) != size:
        raise ValueError("truncated header")
    return struct.unpack(fmt, data)[0]


def _string(f: BinaryIO) -> str:
    n = _read(f, "<Q")
    if n > 1 << 24:
        raise ValueError("string too long")
    data = f.read(n)
    if len(data) != n:
        raise ValueError("truncated header")
    return data.decode("utf-8", "replace")


def _value(f: BinaryIO, vtype: int, keep: bool = True):
    if vtype in _FIXED:
        return _read(f, _FMT[vtype])
    if vtype == _STRING:
        return _string(f)
    if vtype == _ARRAY:
        itype, n = _read(f, "<I"), _read(f, "<Q")
        if n > _MAX_ITEMS:
            raise ValueError("array too long")
        if itype in _FIXED and not (keep and n <= 64):
            f.seek(_FIXED[itype] * n, os.SEEK_CUR)
            return None
        items = [_value(f, itype, keep and n <= 64) for _ in range(n)]
        return items if keep and n <= 64 else None
    raise ValueError(f"unknown value type {vtype}")


def read_header(path: str | os.PathLike) -> GGUFHeader:
    """The scalar keys and tensor names of a GGUF file; ModelFileError (one line) when it is not one."""
    p = Path(path)
    try:
        with p.open("rb") as f:
            if f.read(4) != b"GGUF":
                raise ModelFileError(f"not a GGUF file: {p}")
            version = _read(f, "<I")
            if version < 2:
                raise ModelFileError(f"GGUF version {version} is too old: {p}")
            n_tensors, n_kv = _read(f, "<Q"), _read(f, "<Q")
            if n_tensors > _MAX_ITEMS or n_kv > _MAX_ITEMS:
                raise ValueError("implausible counts")
            head = GGUFHeader()
            for _ in range(n_kv):
                key = _string(f)
                value = _value(f, _read(f, "<I"))
                if value is not None:
                    head.keys[key] = value
            for _ in range(n_tensors):
                name = _string(f)
                n_dims = _read(f, "<I")
                if n_dims > 8:
                    raise ValueError("implausible tensor rank")
                f.seek(8 * n_dims + 4 + 8, os.SEEK_CUR)  # dims, type, offset
                head.tensors.add(name)
            return head
    except OSError as exc:
        raise ModelFileError(f"cannot read {p}: {exc.strerror or exc}") from None
    except (ValueError, struct.error) as exc:
        raise ModelFileError(f"corrupt GGUF header in {p}: {exc}") from None


def head_kind(head: GGUFHeader) -> str | None:
    """What kind of draft head the file holds (KINDS), or None (an ordinary model without MTP layers)."""
    arch = head.arch
    if arch == "eagle3":
        return "eagle3"
    if arch == "gemma4-assistant":
        return "mtp"  # Gemma 4's assistant: MTP sharing the target's KV cache (refused at load, runtime/heads.py)
    if arch == "dflash":
        return "dspark" if "markov_w1.weight" in head.tensors else "dflash"
    n = head.keys.get(f"{arch}.block_count")
    if isinstance(n, int) and n > 0 and f"blk.{n - 1}.nextn.eh_proj.weight" in head.tensors:
        return "mtp"
    return None


def file_head_kind(path: str | os.PathLike) -> str | None:
    return head_kind(read_header(path))


def mtp_only(head: GGUFHeader) -> bool:
    """An `mtp-*.gguf` beside its model: the NextN block(s) without the trunk (llama.cpp's loader takes it as a
    model of its own, `mtp_only` in src/models/qwen35.cpp)."""
    n = head.keys.get(f"{head.arch}.block_count")
    nextn = head.keys.get(f"{head.arch}.nextn_predict_layers")
    if not isinstance(n, int) or not isinstance(nextn, int):
        return False
    return head_kind(head) == "mtp" and not any(f"blk.{i}.attn_norm.weight" in head.tensors for i in range(n - nextn))


def is_head_file(path: str | os.PathLike) -> bool:
    """Whether `path` is a draft head rather than a draft model: an EAGLE-3 or DFlash file, or MTP layers without
    a model around them (a model that has MTP layers is still a model, and drafts as one)."""
    head = read_header(path)
    kind = head_kind(head)
    return kind is not None and (kind != "mtp" or mtp_only(head) or head.arch == "gemma4-assistant")
