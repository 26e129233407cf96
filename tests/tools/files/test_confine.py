"""Confinement: every path must resolve inside the workspace, for every tool."""
import os
from pathlib import Path

import pytest

from localspec.tools import Policy, Toolbox


@pytest.fixture
def layout(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "inside.txt").write_text("inside\n")
    (ws / "sub").mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret\n")
    os.symlink(outside / "secret.txt", ws / "link_file")
    os.symlink(outside, ws / "link_dir")
    os.symlink(ws / "inside.txt", ws / "ok_link")
    os.symlink(outside / "new.txt", ws / "dangling_out")
    return ws, outside


@pytest.fixture
def tb(layout):
    return Toolbox(workspace=layout[0], policy=Policy(mode="auto"))


@pytest.mark.parametrize("path", ["../outside/secret.txt", "sub/../../outside/secret.txt", "link_file",
                                  "link_dir/secret.txt", "~/secret.txt", "/etc/hostname"])
def test_reads_outside_are_refused(tb, path):
    res = tb.call("read_file", {"path": path})
    assert not res.ok
    assert "outside the workspace" in res.error or "home directory" in res.error
    assert "secret" not in res.content


def test_absolute_path_outside_refused_and_names_path(tb, layout):
    _, outside = layout
    res = tb.call("read_file", {"path": str(outside / "secret.txt")})
    assert not res.ok and str(outside / "secret.txt") in res.error and "\n" not in res.error


def test_symlink_escape_is_named_as_symlink(tb):
    res = tb.call("read_file", {"path": "link_file"})
    assert "symlink" in res.error


@pytest.mark.parametrize("path", ["../outside/new.txt", "link_dir/new.txt", "dangling_out", "link_dir/deep/new.txt"])
def test_writes_outside_are_refused_and_nothing_is_created(tb, layout, path):
    _, outside = layout
    res = tb.call("write_file", {"path": path, "content": "x"})
    assert not res.ok and "outside the workspace" in res.error
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]


def test_edit_through_symlink_outside_refused(tb, layout):
    res = tb.call("edit_file", {"path": "link_file", "old": "secret", "new": "pwned"})
    assert not res.ok
    assert (layout[1] / "secret.txt").read_text() == "secret\n"


@pytest.mark.parametrize("tool,args", [("list_dir", {"path": ".."}), ("list_dir", {"path": "link_dir"}),
                                       ("search_text", {"pattern": "secret", "path": ".."}),
                                       ("search_text", {"pattern": "secret", "path": "link_dir"})])
def test_list_and_search_outside_refused(tb, tool, args):
    res = tb.call(tool, args)
    assert not res.ok and "outside the workspace" in res.error


def test_paths_inside_are_allowed(tb, layout):
    ws, _ = layout
    assert tb.call("read_file", {"path": "sub/../inside.txt"}).content == "inside\n"
    assert tb.call("read_file", {"path": str(ws / "inside.txt")}).content == "inside\n"
    assert tb.call("read_file", {"path": "ok_link"}).content == "inside\n"


def test_search_does_not_follow_symlinks_out(tb):
    res = tb.call("search_text", {"pattern": "secret"})
    assert res.ok and "secret" not in res.content.replace("no matches for 'secret'", "")


def test_empty_and_nul_paths_refused(tb):
    assert "empty" in tb.call("read_file", {"path": ""}).error
    assert "NUL" in tb.call("read_file", {"path": "a\x00b"}).error


def test_workspace_must_exist(tmp_path):
    with pytest.raises(ValueError):
        Toolbox(workspace=tmp_path / "missing")


def test_workspace_given_through_symlink(tmp_path, layout):
    ws, _ = layout
    alias = tmp_path / "alias"
    os.symlink(ws, alias)
    tb = Toolbox(workspace=Path(alias), policy=Policy(mode="auto"))
    assert tb.call("read_file", {"path": "inside.txt"}).ok
    assert not tb.call("read_file", {"path": "link_file"}).ok


# --- opening by descriptor: what was checked is what gets opened ------------------------------------

def test_symlink_swapped_in_after_the_check_is_not_followed(layout):
    """Deterministic form of the race in test_races.py: check, then swap, then open."""
    from localspec.tools.files.confine import Workspace
    from localspec.tools.tool_result import ToolError
    ws, outside = layout
    (ws / "d").mkdir()
    (ws / "d" / "secret.txt").write_text("inside\n")
    w = Workspace(ws)
    file_target, new_target = w.resolve("d/secret.txt"), w.resolve("d/new.txt")
    os.rename(ws / "d", ws / "d_moved")
    os.symlink(outside, ws / "d")  # now d/secret.txt by name is the outside secret
    for attempt in (lambda: w.open(file_target), lambda: w.open_parent(new_target, create=True)):
        with pytest.raises(ToolError, match="changed while it was being opened"):
            attempt()
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]  # nothing created outside either


def test_file_swapped_for_symlink_after_the_check_is_not_read(layout):
    from localspec.tools.files.confine import Workspace
    from localspec.tools.tool_result import ToolError
    ws, outside = layout
    w = Workspace(ws)
    target = w.resolve("inside.txt")
    os.rename(ws / "inside.txt", ws / "inside.bak")
    os.symlink(outside / "secret.txt", ws / "inside.txt")
    with pytest.raises(ToolError, match="changed while it was being opened"):
        w.open(target)


def test_replaced_workspace_root_is_refused(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("first\n")
    tb = Toolbox(workspace=root, policy=Policy(mode="auto"))
    os.rename(root, tmp_path / "elsewhere")
    root.mkdir()
    (root / "a.txt").write_text("second\n")
    res = tb.call("read_file", {"path": "a.txt"})
    assert not res.ok and "moved or replaced" in res.error
    assert not tb.call("write_file", {"path": "b.txt", "content": "x"}).ok
    assert not (root / "b.txt").exists() and not (tmp_path / "elsewhere" / "b.txt").exists()


def test_symlink_loop_is_named(tmp_path):
    os.symlink("loop", tmp_path / "loop")
    tb = Toolbox(workspace=tmp_path, policy=Policy(mode="auto"))
    for name, args in [("read_file", {"path": "loop"}), ("write_file", {"path": "loop/x", "content": "x"}),
                       ("list_dir", {"path": "loop"})]:
        res = tb.call(name, args)
        assert not res.ok and "symlink loop" in res.error, (name, res.error)
    assert tb.call("list_dir", {}).content.splitlines()[1] == "loop -> loop  (symlink)"
