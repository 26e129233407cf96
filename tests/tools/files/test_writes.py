"""write_file / edit_file: atomic replacement, diffs shown before writing, exact-once edits."""
import json
import os

import pytest

from localspec.tools import Decision, Policy, Toolbox
from localspec.tools.files import atomic


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
    def boom(src, dst, **dir_fds):  # atomic_write renames relative to a directory descriptor
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


# --- bounded diffs, fingerprints, descriptors ----------------------------------------------------

@pytest.mark.parametrize("where", [0, 1, 2, 500, 997, 999])
def test_diff_of_one_change_is_the_same_as_difflibs(where):
    import difflib

    from localspec.tools import Limits
    from localspec.tools.files.textdiff import text_diff
    old_lines = [f"line {i}\n" for i in range(1000)]
    new_lines = old_lines[:where] + ["changed\n", "added\n"] + old_lines[where + 1:]
    old, new = "".join(old_lines), "".join(new_lines)
    want = "".join(difflib.unified_diff(old_lines, new_lines, "a/f", "b/f", n=3))
    assert text_diff("f", old, new, Limits()) == (want, 2, 1)


def test_diff_without_final_newline_and_creation():
    from localspec.tools import Limits
    from localspec.tools.files.textdiff import text_diff
    diff, added, removed = text_diff("f", "a\nb", "a\nc", Limits())
    assert diff == "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n" \
                   "\\ No newline at end of file\n" and (added, removed) == (1, 1)
    diff, added, removed = text_diff("f", None, "x\ny\n", Limits())
    assert diff == "--- /dev/null\n+++ b/f\n@@ -0,0 +1,2 @@\n+x\n+y\n" and (added, removed) == (2, 0)


def test_big_change_is_one_block_with_right_line_numbers():
    from localspec.tools import Limits
    from localspec.tools.files.textdiff import text_diff
    old = "".join(f"{i}\n" for i in range(100))
    new = old.replace("10\n", "ten\n").replace("20\n", "twenty\n")
    diff, added, removed = text_diff("f", old, new, Limits(diff_lines=5))
    assert diff.splitlines()[2] == "@@ -8,17 +8,17 @@"  # lines 8-10 context, 11-21 changed, 22-24 context
    assert (added, removed) == (11, 11)


def test_overwrite_of_a_big_file_shows_a_summary_not_a_diff(ws):
    from localspec.tools import Limits
    (ws / "big.txt").write_text("x\n" * 5000)
    reqs = []
    tb = Toolbox(workspace=ws, approver=lambda r: reqs.append(r) or True, limits=Limits(diff_input_bytes=1000))
    res = tb.call("write_file", {"path": "big.txt", "content": "y\n"})
    assert res.ok and (ws / "big.txt").read_text() == "y\n"
    assert reqs[0].diff.startswith("(no diff shown: big.txt, 9.8 KiB -> 2 B, is too large to diff")
    assert "5000 old lines replaced by 1 new lines" in reqs[0].diff
    assert reqs[0].danger.level == "high"  # shrinking from 5000 lines to 1 is still seen
    assert "too large to diff" in reqs[0].summary


def test_big_file_changed_during_approval_is_not_clobbered(ws):
    from localspec.tools import Limits
    (ws / "big.txt").write_text("x\n" * 5000)

    def approver(req):
        (ws / "big.txt").write_text("x\n" * 4999 + "z\n")  # same size, other content
        return True

    tb = Toolbox(workspace=ws, approver=approver, limits=Limits(diff_input_bytes=1000))
    res = tb.call("write_file", {"path": "big.txt", "content": "y\n"})
    assert not res.ok and "changed since" in res.error
    assert (ws / "big.txt").read_text().endswith("z\n")


def test_edit_file_size_limit(ws):
    from localspec.tools import Limits
    (ws / "big.txt").write_text("x\n" * 1000 + "needle\n")
    tb = Toolbox(workspace=ws, policy=Policy(mode="auto"), limits=Limits(edit_file_bytes=1000))
    res = tb.call("edit_file", {"path": "big.txt", "old": "needle", "new": "pin"})
    assert not res.ok and "too large for edit_file" in res.error and "1000 B" in res.error


def test_write_into_a_directory_swapped_for_a_symlink_after_planning(ws, tmp_path_factory):
    """Plan (checks the path), then the directory becomes a symlink outside, then apply: refused, nothing outside."""
    outside = tmp_path_factory.mktemp("outside")
    (ws / "d").mkdir()
    (ws / "d" / "f.txt").write_text("old\n")

    def approver(req):
        os.rename(ws / "d", ws / "d_moved")
        os.symlink(outside, ws / "d")
        return True

    tb = Toolbox(workspace=ws, approver=approver)
    res = tb.call("write_file", {"path": "d/f.txt", "content": "new\n"})
    assert not res.ok
    assert list(outside.iterdir()) == []
    assert (ws / "d_moved" / "f.txt").read_text() == "old\n" and leftovers(ws / "d_moved") == []
