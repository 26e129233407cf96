"""write_file / edit_file: atomic replacement, diffs shown before writing, exact-once edits."""
import json
import os

import pytest

from localspec.tools import Decision, Policy, Toolbox
from localspec.tools import atomic


@pytest.fixture
def ws(tmp_path):
    (tmp_path / "notes.txt").write_text("alpha\nbeta\ngamma\n")
    return tmp_path


def auto(ws):
    return Toolbox(workspace=ws, policy=Policy(mode="auto"))


def leftovers(directory):
    return [p.name for p in directory.iterdir() if p.name.endswith(".tmp")]


def test_create_file_with_parent_dirs(ws):
    res = auto(ws).call("write_file", {"path": "a/b/new.txt", "content": "one\ntwo\n"})
    assert res.ok, res.error
    assert (ws / "a/b/new.txt").read_text() == "one\ntwo\n"
    assert res.content == "Created a/b/new.txt (2 lines, 8 bytes)"


def test_overwrite_shows_unified_diff(ws):
    res = auto(ws).call("write_file", {"path": "notes.txt", "content": "alpha\nBETA\ngamma\n"})
    assert res.ok
    assert (ws / "notes.txt").read_text() == "alpha\nBETA\ngamma\n"
    assert "--- a/notes.txt\n+++ b/notes.txt\n" in res.content
    assert "-beta\n+BETA\n" in res.content and res.content.startswith("Updated notes.txt (+1 -1 lines)")


def test_overwrite_keeps_file_mode(ws):
    os.chmod(ws / "notes.txt", 0o640)
    auto(ws).call("write_file", {"path": "notes.txt", "content": "x\n"})
    assert (ws / "notes.txt").stat().st_mode & 0o777 == 0o640


def test_approver_sees_diff_before_anything_is_written(ws):
    seen = []

    def approver(req):
        seen.append((req.tool, req.diff, (ws / "notes.txt").read_text(), req.danger.level, req.cwd))
        return True

    tb = Toolbox(workspace=ws, policy=Policy(mode="ask"), approver=approver)
    assert tb.call("write_file", {"path": "notes.txt", "content": "replaced\n"}).ok
    tool, diff, on_disk, level, cwd = seen[0]
    assert tool == "write_file" and on_disk == "alpha\nbeta\ngamma\n"
    assert "-alpha\n" in diff and "+replaced\n" in diff
    assert level == "medium" and cwd == ws.resolve()


def test_create_diff_is_from_dev_null_and_low_danger(ws):
    reqs = []
    tb = Toolbox(workspace=ws, approver=lambda r: reqs.append(r) or True)
    tb.call("write_file", {"path": "fresh.txt", "content": "hi"})
    assert reqs[0].diff.startswith("--- /dev/null\n+++ b/fresh.txt\n")
    assert "\\ No newline at end of file" in reqs[0].diff
    assert reqs[0].danger.level == "low" and "creates" in reqs[0].danger.reasons[0]


def test_denied_write_leaves_file_alone(ws):
    tb = Toolbox(workspace=ws, approver=lambda r: False)
    res = tb.call("write_file", {"path": "notes.txt", "content": "gone\n"})
    assert not res.ok and "denied" in res.error
    assert (ws / "notes.txt").read_text() == "alpha\nbeta\ngamma\n"


def test_failed_replace_keeps_old_file_and_no_temp(ws, monkeypatch):
    def boom(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(atomic.os, "replace", boom)
    res = auto(ws).call("write_file", {"path": "notes.txt", "content": "new content\n"})
    assert not res.ok
    assert "No space left on device" in res.error and "unchanged" in res.error
    assert (ws / "notes.txt").read_text() == "alpha\nbeta\ngamma\n"
    assert leftovers(ws) == []


def test_failed_fsync_keeps_old_file_and_no_temp(ws, monkeypatch):
    def boom(fd):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(atomic.os, "fsync", boom)
    res = auto(ws).call("edit_file", {"path": "notes.txt", "old": "beta", "new": "BETA"})
    assert not res.ok and "Input/output error" in res.error
    assert (ws / "notes.txt").read_text() == "alpha\nbeta\ngamma\n"
    assert leftovers(ws) == []


def test_unencodable_content_fails_cleanly(ws):
    # A lone surrogate (valid in a JSON string) cannot be encoded as UTF-8.
    res = auto(ws).call("write_file", json.dumps({"path": "notes.txt", "content": "bad \ud800 text"}))
    assert not res.ok and "UTF-8" in res.error
    assert (ws / "notes.txt").read_text() == "alpha\nbeta\ngamma\n"
    assert leftovers(ws) == []


def test_atomic_write_direct_failure_midway(tmp_path, monkeypatch):
    target = tmp_path / "f.txt"
    target.write_bytes(b"old")
    real_fdopen = os.fdopen

    class Exploding:
        def __init__(self, fh):
            self.fh = fh

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.fh.close()

        def write(self, data):
            self.fh.write(data[:2])  # partial write, then the disk "fails"
            raise OSError(28, "No space left on device")

    monkeypatch.setattr(atomic.os, "fdopen", lambda fd, mode: Exploding(real_fdopen(fd, mode)))
    with pytest.raises(OSError):
        atomic.atomic_write(target, b"new data")
    assert target.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.txt"]


def test_write_unchanged_needs_no_approval(ws):
    tb = Toolbox(workspace=ws, approver=lambda r: pytest.fail("should not ask"))
    res = tb.call("write_file", {"path": "notes.txt", "content": "alpha\nbeta\ngamma\n"})
    assert res.ok and "No changes" in res.content


def test_write_onto_directory_refused(ws):
    (ws / "dir").mkdir()
    res = auto(ws).call("write_file", {"path": "dir", "content": "x"})
    assert not res.ok and "is a directory" in res.error


def test_edit_exactly_once(ws):
    res = auto(ws).call("edit_file", {"path": "notes.txt", "old": "beta\n", "new": "beta\nbeta2\n"})
    assert res.ok and "+beta2\n" in res.content
    assert (ws / "notes.txt").read_text() == "alpha\nbeta\nbeta2\ngamma\n"


def test_edit_zero_matches(ws):
    res = auto(ws).call("edit_file", {"path": "notes.txt", "old": "delta", "new": "x"})
    assert not res.ok and "0 matches" in res.error


def test_edit_multiple_matches_says_how_many(ws):
    (ws / "dup.txt").write_text("x = 1\nx = 1\nx = 1\n")
    res = auto(ws).call("edit_file", {"path": "dup.txt", "old": "x = 1", "new": "x = 2"})
    assert not res.ok and "matches 3 times" in res.error
    assert (ws / "dup.txt").read_text() == "x = 1\nx = 1\nx = 1\n"


def test_edit_errors_for_empty_identical_missing_and_binary(ws):
    tb = auto(ws)
    assert "'old' is empty" in tb.call("edit_file", {"path": "notes.txt", "old": "", "new": "x"}).error
    assert "identical" in tb.call("edit_file", {"path": "notes.txt", "old": "beta", "new": "beta"}).error
    assert "does not exist" in tb.call("edit_file", {"path": "nope.txt", "old": "a", "new": "b"}).error
    (ws / "bin").write_bytes(b"\xff\xfe\x00abc")
    assert "not UTF-8" in tb.call("edit_file", {"path": "bin", "old": "abc", "new": "x"}).error


def test_edit_crlf_file_with_lf_old_text(ws):
    (ws / "win.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    res = auto(ws).call("edit_file", {"path": "win.txt", "old": "one\ntwo", "new": "one\n2"})
    assert res.ok, res.error
    assert (ws / "win.txt").read_bytes() == b"one\r\n2\r\nthree\r\n"


def test_file_changed_during_approval_is_not_clobbered(ws):
    def approver(req):
        (ws / "notes.txt").write_text("user edited meanwhile\n")
        return Decision.ALLOW_ONCE

    res = Toolbox(workspace=ws, approver=approver).call("edit_file", {"path": "notes.txt", "old": "beta", "new": "B"})
    assert not res.ok and "changed since" in res.error
    assert (ws / "notes.txt").read_text() == "user edited meanwhile\n"


def test_write_danger_high_for_git_internals_and_shrinking(ws):
    reqs = []
    tb = Toolbox(workspace=ws, approver=lambda r: reqs.append(r) or False)
    (ws / "long.py").write_text("x\n" * 100)
    tb.call("write_file", {"path": "long.py", "content": "y\n"})
    tb.call("write_file", {"path": ".git/config", "content": "y\n"})
    assert [r.danger.level for r in reqs] == ["high", "high"]
    assert "shrinking it from 100 to 1 lines" in reqs[0].danger.reasons[0]
