"""Check-then-use races on paths: another process swaps a workspace directory (or file) for a symlink that
points outside, in a tight loop, with renameat2(RENAME_EXCHANGE), while the tools run. Nothing outside may be
read, listed, written or left behind (temp files), however the swaps and the tools interleave.

The racer is a real separate process making the real syscall (Linux only: RENAME_EXCHANGE is Linux's).
"""
import os
import platform
import subprocess
import sys
import textwrap
import time

import pytest

from localspec.tools import Policy, Toolbox

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="renameat2(RENAME_EXCHANGE) is Linux-only")

SECONDS = 2.5  # per test: long enough for tens of thousands of swaps
SECRET = "OUTSIDE-SECRET"

RACER = textwrap.dedent(r"""
    import ctypes, os, platform, sys, time
    libc = ctypes.CDLL(None, use_errno=True)
    AT_FDCWD, RENAME_EXCHANGE = -100, 2
    a, b, seconds = os.fsencode(sys.argv[1]), os.fsencode(sys.argv[2]), float(sys.argv[3])
    if hasattr(libc, "renameat2"):
        swap = lambda: libc.renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE)
    else:  # glibc < 2.28: the raw syscall
        nr = {"x86_64": 316, "aarch64": 276}[platform.machine()]
        swap = lambda: libc.syscall(nr, AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE)
    print("ready", flush=True)
    n, end = 0, time.monotonic() + seconds
    while time.monotonic() < end:
        if swap() != 0:
            sys.exit("renameat2 failed: " + os.strerror(ctypes.get_errno()))
        n += 1
    print(n, flush=True)
""")


class Racer:
    """Swaps two names in a loop in another process until stopped (or SECONDS pass)."""

    def __init__(self, a, b, seconds=SECONDS):
        self.proc = subprocess.Popen([sys.executable, "-c", RACER, str(a), str(b), str(seconds + 30)],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert self.proc.stdout.readline().strip() == "ready", self.proc.stderr.read()
        self.deadline = time.monotonic() + seconds

    def running(self):
        return time.monotonic() < self.deadline and self.proc.poll() is None

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
        out, err = self.proc.communicate(timeout=30)
        assert "renameat2 failed" not in err, err


@pytest.fixture
def layout(tmp_path):
    """ws/real is a directory with f.txt; ws/swap is a symlink to outside/ which holds look-alike files."""
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    (ws / "real").mkdir(parents=True)
    outside.mkdir()
    (ws / "real" / "f.txt").write_text("inside\n")
    (ws / "real" / "inside_only.txt").write_text("inside\n")
    (outside / "f.txt").write_text(f"inside {SECRET}\n")  # "inside" too: an edit that went outside would match
    (outside / "outside_marker.txt").write_text(f"{SECRET}\n")
    os.symlink(outside, ws / "swap")
    (ws / "file.txt").write_text("inside\n")
    os.symlink(outside / "f.txt", ws / "file_swap")
    return ws, outside


def outside_untouched(outside):
    assert sorted(p.name for p in outside.iterdir()) == ["f.txt", "outside_marker.txt"]
    assert (outside / "f.txt").read_text() == f"inside {SECRET}\n"
    assert (outside / "outside_marker.txt").read_text() == f"{SECRET}\n"


def no_temp_files(*dirs):
    for d in dirs:
        for p in d.rglob("*"):
            assert not p.name.endswith(".tmp"), p


@pytest.mark.slow  # races run for seconds
def test_reads_never_see_outside_while_directory_is_swapped(layout):
    ws, outside = layout
    tb = Toolbox(workspace=ws, policy=Policy(mode="read-only"))
    calls = [("read_file", {"path": "real/f.txt"}), ("search_text", {"pattern": "inside|SECRET", "path": "real"}),
             ("search_text", {"pattern": "inside|SECRET"}), ("list_dir", {"path": "real"}),
             ("list_dir", {"glob": "**"}), ("search_text", {"pattern": "SECRET", "path": "real/f.txt"})]
    racer = Racer(ws / "real", ws / "swap")
    done = ok = 0
    try:
        while racer.running():
            for name, args in calls:
                res = tb.call(name, args)
                assert SECRET not in res.content and "outside_marker" not in res.content, (name, args, res)
                assert "internal error" not in (res.error or ""), res.error
                done += 1
                ok += res.ok
    finally:
        racer.stop()
    assert done > 100 and ok > 0  # the race was run, and the tools kept working between swaps
    outside_untouched(outside)


@pytest.mark.slow  # races run for seconds
def test_reads_never_see_outside_while_file_is_swapped(layout):
    ws, outside = layout
    tb = Toolbox(workspace=ws, policy=Policy(mode="read-only"))
    racer = Racer(ws / "file.txt", ws / "file_swap")
    done = 0
    try:
        while racer.running():
            for name, args in [("read_file", {"path": "file.txt"}),
                               ("search_text", {"pattern": "inside|SECRET", "path": "file.txt"}),
                               ("search_text", {"pattern": "SECRET"})]:
                res = tb.call(name, args)
                assert SECRET not in res.content, (name, res)
                done += 1
    finally:
        racer.stop()
    assert done > 100


@pytest.mark.slow  # races run for seconds
def test_writes_never_land_outside_while_directory_is_swapped(layout):
    ws, outside = layout
    tb = Toolbox(workspace=ws, policy=Policy(mode="auto"))
    racer = Racer(ws / "real", ws / "swap")
    i = written = 0
    try:
        while racer.running():
            i += 1
            for name, args in [("write_file", {"path": f"real/new{i}.txt", "content": f"n{i}\n"}),
                               ("write_file", {"path": "real/f.txt", "content": f"inside {i}\n"}),
                               ("edit_file", {"path": "real/f.txt", "old": "inside", "new": "inside"[::-1]}),
                               ("edit_file", {"path": "real/f.txt", "old": "edisni", "new": "inside"}),
                               ("write_file", {"path": f"real/deep{i % 7}/x{i}.txt", "content": "d\n"})]:
                res = tb.call(name, args)
                assert "internal error" not in (res.error or ""), res.error
                written += res.ok
    finally:
        racer.stop()
    assert i > 20 and written > 0
    outside_untouched(outside)
    no_temp_files(ws, outside)


@pytest.mark.slow  # races run for seconds
def test_writes_never_follow_a_swapped_in_file_symlink(layout):
    ws, outside = layout
    tb = Toolbox(workspace=ws, policy=Policy(mode="auto"))
    racer = Racer(ws / "file.txt", ws / "file_swap")
    i = 0
    try:
        while racer.running():
            i += 1
            tb.call("write_file", {"path": "file.txt", "content": f"inside {i}\n"})
            tb.call("edit_file", {"path": "file.txt", "old": "inside", "new": "INSIDE"})
    finally:
        racer.stop()
    assert i > 20
    outside_untouched(outside)
    no_temp_files(ws, outside)


def test_racer_really_swaps(layout):
    """The harness itself: without this the tests above could pass without any race happening."""
    ws, _ = layout
    racer = Racer(ws / "real", ws / "swap", seconds=0.5)
    seen = set()
    try:
        while racer.running():
            seen.add((ws / "real").is_symlink())
    finally:
        racer.stop()
    assert seen == {True, False}, platform.platform()
