"""read_file, list_dir, search_text: ranges, caps, binary refusal, globbing, bounded results."""
import pytest

from localspec.tools import Limits, Policy, Toolbox

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 100


@pytest.fixture
def ws(tmp_path):
    (tmp_path / "ten.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    (tmp_path / "img.png").write_bytes(PNG)
    (tmp_path / "src" / "pkg").mkdir(parents=True)
    (tmp_path / "src" / "a.py").write_text("import os\nTODO = 1\n")
    (tmp_path / "src" / "pkg" / "b.py").write_text("x = 2  # TODO later\n")
    (tmp_path / "src" / "pkg" / "c.txt").write_text("TODO in text\n")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config").write_text("TODO git internals\n")
    return tmp_path


@pytest.fixture
def tb(ws):
    return Toolbox(workspace=ws, policy=Policy(mode="ask"))  # reads never need approval


def test_read_whole_file(tb):
    res = tb.call("read_file", {"path": "ten.txt"})
    assert res.ok and res.error is None
    assert res.content == "".join(f"line {i}\n" for i in range(1, 11))


def test_read_line_range_inclusive(tb):
    res = tb.call("read_file", {"path": "ten.txt", "start_line": 3, "end_line": 5})
    assert res.ok
    assert res.content == "line 3\nline 4\nline 5\n[lines 3-5 of 10; file continues]"


def test_read_range_end_clamped_and_start_past_end(tb):
    res = tb.call("read_file", {"path": "ten.txt", "start_line": 9, "end_line": 50})
    assert res.ok and res.content.startswith("line 9\nline 10\n") and "[lines 9-10 of 10]" in res.content
    res = tb.call("read_file", {"path": "ten.txt", "start_line": 11})
    assert not res.ok and "past the end" in res.error and "10 lines" in res.error


def test_read_bad_range_names_fields(tb):
    res = tb.call("read_file", {"path": "ten.txt", "start_line": 5, "end_line": 2})
    assert not res.ok and "end_line" in res.error and "start_line" in res.error


def test_read_binary_refused_with_summary(tb):
    res = tb.call("read_file", {"path": "img.png"})
    assert not res.ok
    assert "binary" in res.error and "PNG image" in res.error and "108 B" in res.error
    assert res.content == ""


def test_read_missing_and_directory(tb):
    assert "does not exist" in tb.call("read_file", {"path": "nope.txt"}).error
    assert "is a directory" in tb.call("read_file", {"path": "src"}).error


def test_read_size_cap_with_note(ws):
    (ws / "big.txt").write_text("".join(f"{i:07d}\n" for i in range(2000)))  # 16000 bytes
    tb = Toolbox(workspace=ws, policy=Policy(mode="auto"), limits=Limits(read_bytes=1000))
    res = tb.call("read_file", {"path": "big.txt"})
    assert res.ok
    body, note = res.content.split("[truncated", 1)
    assert len(body.encode()) <= 1000 and body.endswith("\n")
    assert "showed lines 1-125 of 2000" in note and "start_line" in note
    more = tb.call("read_file", {"path": "big.txt", "start_line": 126, "end_line": 127})
    assert more.content.startswith("0000125\n0000126\n")


def test_read_single_huge_line_shows_its_start(ws):
    (ws / "min.js").write_text("x" * 5000)
    tb = Toolbox(workspace=ws, limits=Limits(read_bytes=100))
    res = tb.call("read_file", {"path": "min.js"})
    assert res.ok and res.content.startswith("x" * 100) and "[truncated" in res.content


def test_read_empty_file(ws, tb):
    (ws / "empty").write_text("")
    res = tb.call("read_file", {"path": "empty"})
    assert res.ok and "empty" in res.content


def test_list_dir_entries_sorted_with_types_and_sizes(tb):
    res = tb.call("list_dir", {})
    assert res.ok
    lines = res.content.splitlines()
    assert lines == ["workspace root: 4 entries", ".git/", "img.png  (108 B)", "src/", "ten.txt  (71 B)"]


def test_list_dir_glob_recursive_and_not_recursive(tb):
    res = tb.call("list_dir", {"path": "src", "glob": "**/*.py"})
    assert res.ok
    assert [l.split()[0] for l in res.content.splitlines()[1:]] == ["a.py", "pkg/b.py"]
    flat = tb.call("list_dir", {"path": "src", "glob": "*.py"})
    assert [l.split()[0] for l in flat.content.splitlines()[1:]] == ["a.py"]
    none = tb.call("list_dir", {"glob": "*.rs"})
    assert none.ok and "no entries" in none.content


def test_list_dir_glob_skips_git(tb):
    res = tb.call("list_dir", {"glob": "**"})
    assert ".git" not in res.content and "src/pkg/c.txt" in res.content


def test_list_dir_bounded(ws):
    d = ws / "many"
    d.mkdir()
    for i in range(30):
        (d / f"f{i:02d}").write_text("")
    tb = Toolbox(workspace=ws, limits=Limits(list_entries=10))
    res = tb.call("list_dir", {"path": "many"})
    lines = res.content.splitlines()
    assert len(lines) == 12 and lines[1].startswith("f00") and "more entries not shown" in lines[-1]


def test_list_dir_on_file_errors(tb):
    res = tb.call("list_dir", {"path": "ten.txt"})
    assert not res.ok and "not a directory" in res.error


def test_search_regex_results_and_skips(tb):
    res = tb.call("search_text", {"pattern": r"TODO\b"})
    assert res.ok
    assert res.content.splitlines() == ["src/a.py:2: TODO = 1", "src/pkg/b.py:1: x = 2  # TODO later",
                                        "src/pkg/c.txt:1: TODO in text"]


def test_search_glob_and_path(tb):
    res = tb.call("search_text", {"pattern": "TODO", "glob": "*.py"})
    assert [l.split(":")[0] for l in res.content.splitlines()] == ["src/a.py", "src/pkg/b.py"]
    res = tb.call("search_text", {"pattern": "TODO", "path": "src/pkg"})
    assert res.content.splitlines()[0] == "src/pkg/b.py:1: x = 2  # TODO later"
    res = tb.call("search_text", {"pattern": "line [2-3]$", "path": "ten.txt"})
    assert res.content.splitlines() == ["ten.txt:2: line 2", "ten.txt:3: line 3"]


def test_search_bounded_results(tb):
    res = tb.call("search_text", {"pattern": "line", "max_results": 4})
    lines = res.content.splitlines()
    assert len(lines) == 5 and "stopped after 4 matches" in lines[-1]


def test_search_bad_regex_is_clear(tb):
    res = tb.call("search_text", {"pattern": "foo(("})
    assert not res.ok and "invalid regex" in res.error and "'foo(('" in res.error


def test_search_no_matches_is_ok(tb):
    res = tb.call("search_text", {"pattern": "zzz_not_there"})
    assert res.ok and "no matches" in res.content


def test_search_skips_binary_and_huge_files(ws):
    (ws / "blob.bin").write_bytes(b"TODO\x00\x01")
    (ws / "huge.txt").write_text("TODO\n" * 1000)
    tb = Toolbox(workspace=ws, limits=Limits(search_file_bytes=1000))
    res = tb.call("search_text", {"pattern": "TODO", "glob": "*.*"})
    assert "blob.bin" not in res.content and "huge.txt:" not in res.content
    assert "skipped 1" in res.content


def test_search_long_lines_cut(ws):
    (ws / "long.txt").write_text("needle " + "y" * 1000 + "\n")
    res = Toolbox(workspace=ws).call("search_text", {"pattern": "needle"})
    assert len(res.content) < 400 and res.content.endswith("…")
