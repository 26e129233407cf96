"""Saved sequence states on disk, in a format of our own that is checked whole before llama.cpp sees a byte of it.

Why not llama.cpp's own state files: its loader trusts them. Cutting 548 bytes off one made it abort the process
(`GGML_ASSERT(nread <= state_size)`, SIGABRT) before the file could be dropped, so every later run on that model
died the same way; and it checks only the token list it stores, so a state computed for another system prompt but
stored under this prompt's tokens was restored (a planted state turned the answer "BLUE" into "GREEN"), and so was
another model's state of the same shape. Here a file is

    MAGIC | header length (u32) | header (JSON: format, model, tokens, payload bytes) | tokens (i32 each) | payload |
    MAC (32 bytes: keyed BLAKE2b over everything before it)

where the payload is llama.cpp's sequence state as `llama_state_seq_get_data` gives it and `model` names the model
file and context layout the state belongs to. A file is read whole (bounded), and refused unless every part
agrees: its length, the MAC under this user's key (`key` beside the model folders, 0600, made once), the model,
and the full token list the prompt starts with. Only then does llama.cpp get the payload, from memory
(`llama_state_seq_set_data`, which fails with an error code on a short buffer instead of aborting). A file that
fails is removed and computed again.

Writes cannot be damaged half-way or redirected: a temporary file with an unpredictable name, opened
O_CREAT|O_EXCL|O_NOFOLLOW, is written, fsync'ed, renamed over the name, and the folder fsync'ed. The folders are
made 0700; an existing one of ours with looser modes is tightened, one owned by another user (or a link) is not
used at all.

runtime/ leans on nothing of ours (pyproject's contracts), so this does not use localspec/private_files.py, which
does the same for the conversation store.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import stat
import struct
from pathlib import Path
from typing import Sequence

MAGIC = b"LSPREFX1"  # "localspec prefix state", format 1
FORMAT = 1
MAC_BYTES = 32
_HEADER_LEN = struct.Struct("<I")
MAX_HEADER = 4096  # the header is a few short fields
KEY_NAME = "key"
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
LLAMA_SEQ_MAGIC = b"qsgg"  # llama.cpp's own sequence-state files (LLAMA_STATE_SEQ_MAGIC, little endian): the old format


class Refused(Exception):
    """A state file that is not used, and why (one line)."""


def private_folder(folder: Path, top: Path) -> None:
    """Create `folder` and the folders from `top` down to it 0700; tighten existing ones that are ours and looser;
    raise Refused for one that is a link, not a folder, or someone else's."""
    chain = [top, *[p for p in reversed(folder.parents) if top in p.parents], folder]
    try:
        top.parent.mkdir(parents=True, exist_ok=True)  # above ours: the usual mode, as any program makes ~/.cache
    except OSError as exc:
        raise Refused(f"cannot create {top.parent}: {exc.strerror or exc}") from None
    for path in dict.fromkeys(chain):
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass
        except OSError as exc:
            raise Refused(f"cannot create {path}: {exc.strerror or exc}") from None
        try:
            st = os.lstat(path)
        except OSError as exc:
            raise Refused(f"cannot read {path}: {exc.strerror or exc}") from None
        if not stat.S_ISDIR(st.st_mode):
            raise Refused(f"{path} is not a folder (a link or a file): not used for prompt prefixes")
        if st.st_uid != os.geteuid():
            raise Refused(f"{path} belongs to another user (uid {st.st_uid}): not used for prompt prefixes")
        if st.st_mode & 0o077:
            try:
                os.chmod(path, 0o700)
            except OSError as exc:
                raise Refused(f"{path} can be used by other users and cannot be made private: "
                              f"{exc.strerror or exc}") from None


def load_key(folder: Path) -> bytes:
    """This user's MAC key, in `folder` (made once: 32 random bytes, 0600, never through a link)."""
    path = folder / KEY_NAME
    for _ in range(2):
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | _NOFOLLOW | _CLOEXEC)
        except FileNotFoundError:
            try:
                _write_new(path, [secrets.token_bytes(32)])
            except FileExistsError:
                pass  # another process made it first: read theirs
            continue
        except OSError as exc:
            raise Refused(f"cannot read the key {path}: {exc.strerror or exc}") from None
        with os.fdopen(fd, "rb") as fh:
            st = os.fstat(fh.fileno())
            key = fh.read(64)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o077 or len(key) != 32:
            raise Refused(f"the key {path} is not a private 32-byte file of this user: prompt prefixes not used")
        return key
    raise Refused(f"cannot make the key {path}")


def _mac(key: bytes, parts: Sequence) -> bytes:
    h = hashlib.blake2b(key=key, digest_size=MAC_BYTES)
    for part in parts:
        h.update(part)
    return h.digest()


def _head(model: str, tokens: Sequence[int], payload_bytes: int) -> tuple[bytes, bytes]:
    header = json.dumps({"format": FORMAT, "model": model, "tokens": len(tokens), "payload": payload_bytes},
                        separators=(",", ":")).encode()
    toks = struct.pack(f"<{len(tokens)}i", *tokens)
    return MAGIC + _HEADER_LEN.pack(len(header)) + header, toks


def file_size(model: str, tokens: int, payload_bytes: int) -> int:
    """The size of the file for a state, give or take a few header bytes (a bound check before writing)."""
    head, _ = _head(model, (), payload_bytes)
    return len(head) + 8 + 4 * tokens + payload_bytes + MAC_BYTES


def write_state(path: Path, key: bytes, model: str, tokens: Sequence[int], payload) -> None:
    """Write a state file for `tokens` (payload: llama.cpp's bytes, any buffer) in one atomic step."""
    head, toks = _head(model, tokens, len(payload))
    parts = [head, toks, payload]
    mac = _mac(key, parts)
    tmp = path.with_name(f".{secrets.token_hex(12)}.tmp")
    _write_new(tmp, [*parts, mac])
    try:
        os.replace(tmp, path)
        _sync_folder(path.parent)
    except BaseException:
        _unlink(tmp)
        raise


def read_state(path: Path, key: bytes, model: str, expected: Sequence[int], max_bytes: int) -> bytearray:
    """The payload of a state file for exactly `expected`, checked whole; Refused says why it is not used."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | _NOFOLLOW | _CLOEXEC)
    except OSError as exc:
        raise Refused(f"cannot open it: {exc.strerror or exc}") from None
    with os.fdopen(fd, "rb", buffering=0) as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise Refused("not a regular file")
        if st.st_size > max_bytes:
            raise Refused(f"{st.st_size:,} bytes, more than the {max_bytes:,} a folder may hold")
        data = bytearray(st.st_size)
        got = fh.readinto(data) or 0
        if got != st.st_size or fh.read(1):
            raise Refused("it changed while it was read")
    if data[:len(LLAMA_SEQ_MAGIC)] == LLAMA_SEQ_MAGIC:
        raise Refused("llama.cpp's own format, as localspec wrote before; computed again in the checked one")
    fixed = len(MAGIC) + _HEADER_LEN.size
    if len(data) < fixed + MAC_BYTES or data[:len(MAGIC)] != MAGIC:
        raise Refused("not a prefix state localspec wrote (damaged or planted)")
    (header_len,) = _HEADER_LEN.unpack_from(data, len(MAGIC))
    if header_len > MAX_HEADER or fixed + header_len > len(data) - MAC_BYTES:
        raise Refused("its header is damaged")
    try:
        header = json.loads(bytes(data[fixed:fixed + header_len]))
        n_tokens, payload_bytes = int(header["tokens"]), int(header["payload"])
        owner, fmt = header["model"], header["format"]
    except (ValueError, KeyError, TypeError):
        raise Refused("its header is damaged") from None
    toks_at = fixed + header_len
    payload_at = toks_at + 4 * n_tokens
    if n_tokens < 0 or payload_bytes < 0 or payload_at + payload_bytes + MAC_BYTES != len(data):
        raise Refused(f"{len(data):,} bytes where its header says {payload_at + payload_bytes + MAC_BYTES:,} "
                      "(cut short or padded)")
    view = memoryview(data)
    mac = _mac(key, [view[:len(data) - MAC_BYTES]])
    if not hmac.compare_digest(mac, bytes(view[len(data) - MAC_BYTES:])):
        view.release()
        raise Refused("its checksum does not match (damaged, or not written by this user's localspec)")
    view.release()
    if fmt != FORMAT or owner != model:
        raise Refused(f"it belongs to another model or context layout ({str(owner)[:80]})")
    if n_tokens != len(expected) or list(struct.unpack_from(f"<{n_tokens}i", data, toks_at)) != list(expected):
        raise Refused("it holds another prompt's tokens")
    del data[payload_at + payload_bytes:]  # in place: a state can be hundreds of megabytes
    del data[:payload_at]
    return data


def _write_new(path: Path, parts: Sequence) -> None:
    """Create `path` (O_EXCL|O_NOFOLLOW, 0600) with `parts` written in order, flushed to disk."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o600)
    try:
        with os.fdopen(fd, "wb") as fh:
            for part in parts:
                fh.write(part)
            fh.flush()
            os.fsync(fh.fileno())
    except BaseException:
        _unlink(path)
        raise


def _sync_folder(folder: Path) -> None:
    """The rename is on disk too (a power cut after it leaves the new file or the old one, whole)."""
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _CLOEXEC)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _unlink(path: Path) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
