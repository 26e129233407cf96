"""The checked state-file format (runtime/state_files.py) as pure file handling: every way a file can differ from
what this user's localspec wrote for these tokens and this model is refused before llama.cpp would see it."""
from __future__ import annotations

import os
import struct

import pytest

from localspec.runtime.state_files import MAGIC, Refused, load_key, read_state, write_state

TOKENS = list(range(100, 180))
PAYLOAD = bytes(range(256)) * 40


@pytest.fixture
def saved(tmp_path):
    key = load_key(tmp_path)
    path = tmp_path / "x.state"
    write_state(path, key, "model-a", TOKENS, memoryview(PAYLOAD))
    return path, key


def test_what_was_written_reads_back(saved):
    path, key = saved
    assert bytes(read_state(path, key, "model-a", TOKENS, 1 << 30)) == PAYLOAD


def _tamper(path, fn):
    data = bytearray(path.read_bytes())
    path.write_bytes(bytes(fn(data)))


@pytest.mark.parametrize("damage,why", [
    (lambda d: d[:-548], "cut short or padded"),
    (lambda d: d + b"\0" * 10, "cut short or padded"),
    (lambda d: d[:5], "not a prefix state"),
    (lambda d: b"", "not a prefix state"),
    (lambda d: d[:-40] + bytes([d[-40] ^ 1]) + d[-39:], "checksum"),  # one bit of the payload
    (lambda d: d[:len(MAGIC)] + struct.pack("<I", 1 << 30) + d[len(MAGIC) + 4:], "header is damaged"),
    (lambda d: b"qsgg" + d[4:], "llama.cpp's own format"),
])
def test_damaged_files_are_refused(saved, damage, why):
    path, key = saved
    _tamper(path, damage)
    with pytest.raises(Refused, match=why):
        read_state(path, key, "model-a", TOKENS, 1 << 30)


def test_a_file_made_without_this_users_key_is_refused(saved, tmp_path):
    """A planted file in this very format, for these tokens and this model, with another payload: the MAC needs the
    key, which only this user's localspec reads."""
    path, key = saved
    write_state(path, os.urandom(32), "model-a", TOKENS, b"another prompt's state")
    with pytest.raises(Refused, match="checksum"):
        read_state(path, key, "model-a", TOKENS, 1 << 30)


def test_other_tokens_another_model_and_the_size_bound(saved):
    path, key = saved
    with pytest.raises(Refused, match="another prompt's tokens"):
        read_state(path, key, "model-a", TOKENS[:-1] + [7], 1 << 30)
    with pytest.raises(Refused, match="another model"):
        read_state(path, key, "model-b", TOKENS, 1 << 30)
    with pytest.raises(Refused, match="more than"):
        read_state(path, key, "model-a", TOKENS, 1000)


def test_a_link_or_a_fifo_is_never_read(saved, tmp_path):
    path, key = saved
    link = tmp_path / "link.state"
    link.symlink_to(path)
    with pytest.raises(Refused, match="cannot open"):
        read_state(link, key, "model-a", TOKENS, 1 << 30)
    fifo = tmp_path / "fifo.state"
    os.mkfifo(fifo)
    with pytest.raises(Refused, match="not a regular file"):
        read_state(fifo, key, "model-a", TOKENS, 1 << 30)


def test_the_key_is_made_once_private_and_a_loose_one_is_refused(tmp_path):
    first = load_key(tmp_path)
    assert load_key(tmp_path) == first and len(first) == 32
    assert oct((tmp_path / "key").stat().st_mode & 0o777) == "0o600"
    os.chmod(tmp_path / "key", 0o644)
    with pytest.raises(Refused, match="private"):
        load_key(tmp_path)
