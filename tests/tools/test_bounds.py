"""No input hangs or exhausts the tools: pathological regexes and globs, FIFOs/sockets/devices, huge files.

Anything that could hang runs in a child process with a generous timeout: a hang fails the test instead of
the suite (and Python's re never gives the GIL back, so a thread could not be timed out). The timeouts are
bounds for "it returns", not speed assertions. Memory is measured as peak RSS growth (ru_maxrss) in a child
process around one tool call on a large (sparse where possible) file; on Linux the high-water mark is reset
first (/proc/self/clear_refs), so the growth is measured from the current RSS, not from import-time peaks.
"""
import json
import os
import resource
import socket
import stat
import subprocess
import sys
import textwrap

import pytest

from localspec.tools import Limits, Toolbox
from localspec.tools.files.textdiff import text_diff

HANG = 120  # seconds; every case below takes well under a second when bounded
MiB = 1024 * 1024


def run_child(code: str, ws, timeout: float = HANG) -> dict:
    """Run code (which sets `out`) in a fresh interpreter with tb = Toolbox(ws, auto); return out as JSON."""
    prelude = textwrap.dedent(f"""
        import json, resource, sys
        from localspec.tools import Limits, Policy, Toolbox
        tb = Toolbox({str(ws)!r}, Policy("auto"))
        def r(name, args):
            res = tb.call(name, args)
            return {{"ok": res.ok, "content": res.content[:2000], "error": res.error}}
        def rss():
            try:  # Linux: the peak of this process since clear_refs. ru_maxrss would also count the parent's size
                # at fork time (kept across exec), so a big pytest process would hide the child's growth.
                with open("/proc/self/status") as fh:
                    return next(int(l.split()[1]) * 1024 for l in fh if l.startswith("VmHWM:"))
            except (OSError, StopIteration):
                kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
                return kib if sys.platform == "darwin" else kib * 1024
        def peak_baseline():
            import ctypes, gc
            gc.collect()
            try:  # glibc: hand free heap pages back, so new allocations show up as growth instead of reusing them
                ctypes.CDLL(None).malloc_trim(0)
            except (OSError, AttributeError):
                pass
            try:  # Linux: reset the peak to the current RSS so earlier transient peaks do not hide growth
                with open("/proc/self/clear_refs", "w") as fh:
                    fh.write("5")
            except OSError:
                pass
            return rss()
        out = {{}}
    """)
    try:
        proc = subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(code) + "\nprint(json.dumps(out))"],
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        pytest.fail(f"tool call did not return within {timeout}s:\n{code}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


# --- regexes ------------------------------------------------------------------------------------

EVIL_REGEXES = [r"^(a+)+$", r"(a|a)*$", r"(a|aa)+$", r"(a*)*b", r"^(\w+\s?)*$", r"(x+x+)+y", r"(.*a){12}!",
                r"^(([a-z])+.)+[A-Z]([a-z])+$", r"(a?){30}a{30}", r"(\d+|\w+)*@", r"((a+)+)+$", r"(.*)*z"]


def test_catastrophic_regexes_return(tmp_path):
    (tmp_path / "evil.txt").write_text("a" * 40 + "!\n" + "a" * 5000 + "!\n" + "x" * 3000 + "\n")
    (tmp_path / "ok.txt").write_text("aaaa\n")
    out = run_child(f"""
        for p in {EVIL_REGEXES!r}:
            out[p] = r("search_text", {{"pattern": p}})
    """, tmp_path)
    for pattern, res in out.items():
        assert res["ok"], (pattern, res)
    for pattern in [r"^(a+)+$", r"(a|aa)+$", r"((a+)+)+$", r"(a*)*b", r"(x+x+)+y"]:  # none matches an evil line
        assert "evil.txt" not in out[pattern]["content"], pattern
    assert out[r"^(a+)+$"]["content"] == "ok.txt:1: aaaa"  # still a working regex engine


@pytest.mark.parametrize("pattern,needle", [(r"(a)\1", "backreferences"), (r"(?P<x>a)(?P=x)", "backreferences"),
                                            (r"foo(?=bar)", "lookahead"), (r"foo(?!bar)", "lookahead"),
                                            (r"(?<=x)y", "lookbehind"), (r"(?<!x)y", "lookbehind"),
                                            (r"a\Z", "\\z"), (r"a{1001}", "repetition"), ("foo((", "missing )")])
def test_unsupported_regex_is_one_clear_line(tmp_path, pattern, needle):
    (tmp_path / "f.txt").write_text("foobar\n")
    res = Toolbox(tmp_path).call("search_text", {"pattern": pattern})
    assert not res.ok and "invalid regex" in res.error and needle in res.error and "\n" not in res.error
    assert "internal error" not in res.error


def test_regex_features_that_stay(tmp_path):
    (tmp_path / "f.txt").write_text("def Foo(x):\n  return 42\nfoo_bar = 1\n")
    tb = Toolbox(tmp_path)
    assert tb.call("search_text", {"pattern": r"(?i)^def\s+foo\b"}).content == "f.txt:1: def Foo(x):"
    assert tb.call("search_text", {"pattern": r"\d{2}$"}).content == "f.txt:2:   return 42"
    assert tb.call("search_text", {"pattern": r"(?P<name>foo)_\w+"}).content == "f.txt:3: foo_bar = 1"


# --- globs --------------------------------------------------------------------------------------

EVIL_GLOBS = ["****************z", "*" * 200 + "z", "**/**/**/**/**/**/**/**/**/**/**/**/z", "*a*a*a*a*a*a*a*a*a*a*b",
              "?*?*?*?*?*?*?*?*?*?*?*?*z", "**a**a**a**a**a**a**a**a**b", "[a-z]*" * 30 + "z"]


def test_catastrophic_globs_return(tmp_path):
    deep = tmp_path / "/".join(["a" * 40] * 5)
    deep.mkdir(parents=True)
    (deep / ("a" * 250)).write_text("needle\n")
    (tmp_path / "yes_z").write_text("needle\n")
    out = run_child(f"""
        for g in {EVIL_GLOBS!r}:
            out["list " + g] = r("list_dir", {{"glob": g}})
            out["search " + g] = r("search_text", {{"pattern": "needle", "glob": g}})
        from localspec.tools.files.globs import glob_matches
        out["direct"] = [glob_matches(g, "a" * 5000 + "/" + "a" * 5000) for g in {EVIL_GLOBS!r}]
    """, tmp_path)
    assert out.pop("direct") == [False] * len(EVIL_GLOBS)
    for key, res in out.items():
        assert res["ok"], (key, res)
        assert ("a" * 250) not in res["content"], key
    assert "yes_z" in out["list ****************z"]["content"]


@pytest.mark.parametrize("glob,expected", [("*.py", ["a.py"]), ("**/*.py", ["a.py", "d/b.py", "d/e/c.py"]),
                                           ("***.py", ["a.py", "d/b.py", "d/e/c.py"]), ("d/**", ["d/b.py", "d/e",
                                                                                              "d/e/c.py"]),
                                           ("[!a]*", ["d"]), ("?.py", ["a.py"]), ("d/*/c.py", ["d/e/c.py"])])
def test_glob_semantics_kept(tmp_path, glob, expected):
    (tmp_path / "d" / "e").mkdir(parents=True)
    for p in ["a.py", "d/b.py", "d/e/c.py"]:
        (tmp_path / p).write_text("x\n")
    res = Toolbox(tmp_path).call("list_dir", {"glob": glob})
    assert [line.split()[0].rstrip("/") for line in res.content.splitlines()[1:]] == expected


def test_bad_glob_is_one_clear_line(tmp_path):
    res = Toolbox(tmp_path).call("list_dir", {"glob": "[z-a]"})
    assert not res.ok and "invalid glob '[z-a]'" in res.error and "internal error" not in res.error


# --- special files ------------------------------------------------------------------------------

@pytest.fixture
def specials(tmp_path):
    ws = tmp_path
    (ws / "sub").mkdir()
    os.mkfifo(ws / "fifo")
    os.mkfifo(ws / "sub" / "fifo2")
    (ws / "sub" / "plain.txt").write_text("needle\n")
    made = ["fifo"]
    sock = socket.socket(socket.AF_UNIX)
    old = os.getcwd()
    try:
        os.chdir(ws)  # AF_UNIX paths are short; bind relative to the workspace
        sock.bind("sock")
        made.append("sock")
    except OSError:
        pass
    finally:
        os.chdir(old)
    try:
        os.mknod(ws / "null", stat.S_IFCHR | 0o666, os.makedev(1, 3))
        made.append("null")
    except (PermissionError, AttributeError, OSError):
        pass  # only root may make device nodes
    yield ws, made
    sock.close()


def test_no_tool_blocks_or_reads_special_files(specials):
    ws, made = specials
    out = run_child(f"""
        for name in {made!r}:
            out[name] = {{
                "read": r("read_file", {{"path": name}}),
                "search": r("search_text", {{"pattern": "x", "path": name}}),
                "write": r("write_file", {{"path": name, "content": "x"}}),
                "edit": r("edit_file", {{"path": name, "old": "a", "new": "b"}}),
                "list": r("list_dir", {{"path": name}}),
            }}
        out["search_all"] = r("search_text", {{"pattern": "needle"}})
        out["list_root"] = r("list_dir", {{}})
        out["list_glob"] = r("list_dir", {{"glob": "**"}})
    """, ws, timeout=60)
    for name in made:
        for tool, res in out[name].items():
            assert not res["ok"], (name, tool, res)
            assert "internal error" not in res["error"], (name, tool, res)
            if tool != "list":
                assert "not a regular file" in res["error"], (name, tool, res)
    assert out["search_all"]["ok"] and out["search_all"]["content"].startswith("sub/plain.txt:1: needle")
    assert "fifo  (FIFO)" in out["list_root"]["content"]
    assert out["list_glob"]["ok"] and "sub/fifo2" in out["list_glob"]["content"]
    assert stat.S_ISFIFO(os.stat(ws / "fifo").st_mode)  # never replaced by a regular file


# --- memory -------------------------------------------------------------------------------------

def _sparse_text_file(path, size):
    """A text-looking single line of `size` bytes that takes almost no disk: 8 KiB of text, then a hole."""
    with open(path, "wb") as fh:
        fh.write(b"a" * 8192)
        fh.truncate(size)


@pytest.fixture
def huge(tmp_path):
    path = tmp_path / "huge.txt"
    _sparse_text_file(path, 300 * MiB)
    yield tmp_path, path
    path.unlink(missing_ok=True)


def _growth(ws, code):
    (ws / "warm").mkdir(exist_ok=True)
    (ws / "warm" / "w.txt").write_text("x\n")
    return run_child(f"""
        r("read_file", {{"path": "warm/w.txt"}}); r("write_file", {{"path": "warm/w.txt", "content": "warm\\n"}})
        r("edit_file", {{"path": "warm/w.txt", "old": "warm", "new": "hot"}})
        r("search_text", {{"pattern": "x", "path": "warm"}}); r("list_dir", {{"glob": "warm/*"}})
        before = peak_baseline()
        {code}
        out["growth"] = rss() - before
    """, ws)


BOUND = 4 * max(Limits().read_bytes, Limits().diff_input_bytes, 1 * MiB) + 32 * MiB  # 36 MiB, vs 300 MiB files


@pytest.mark.slow  # huge files
def test_read_file_of_a_huge_single_line_stays_bounded(huge):
    ws, _ = huge
    (ws / "small.txt").write_text("x\n")
    out = _growth(ws, """
        res = tb.call("read_file", {"path": "huge.txt"})
        out["res"] = {"ok": res.ok, "head": res.content[:8193], "tail": res.content[-300:], "len": len(res.content)}
        out["range"] = r("read_file", {"path": "huge.txt", "start_line": 2})
    """)
    res = out["res"]
    assert res["ok"] and res["head"] == "a" * 8192 + "\x00" and "[truncated at 256.0 KiB" in res["tail"]
    assert res["len"] < Limits().read_bytes + 300
    assert not out["range"]["ok"] and "past the end" in out["range"]["error"]
    assert out["growth"] < BOUND, f"read_file grew RSS by {out['growth'] / MiB:.0f} MiB"


@pytest.mark.slow  # huge files
def test_write_over_a_huge_file_asks_with_a_summary_and_stays_bounded(huge):
    ws, path = huge
    (ws / "small.txt").write_text("x\n")
    out = _growth(ws, """
        seen = []
        tb.approver = lambda req: seen.append((req.summary, req.diff)) or False
        tb.policy = Policy("ask")
        out["denied"] = r("write_file", {"path": "huge.txt", "content": "short\\n"})
        out["seen"] = seen
        tb.policy = Policy("auto")
        out["edit"] = r("edit_file", {"path": "huge.txt", "old": "aaaa", "new": "b"})
        out["written"] = r("write_file", {"path": "huge.txt", "content": "short\\n"})
    """)
    assert not out["denied"]["ok"] and "denied" in out["denied"]["error"]
    (summary, diff), = out["seen"]
    assert "300.0 MiB" in diff and "too large" in diff and len(diff) < 500
    assert "too large to diff" in summary
    assert not out["edit"]["ok"] and "too large for edit_file" in out["edit"]["error"]
    assert out["written"]["ok"], out["written"]
    assert path.read_text() == "short\n"
    assert out["growth"] < BOUND, f"write_file grew RSS by {out['growth'] / MiB:.0f} MiB"


def test_search_and_list_skip_huge_files_cheaply(huge):
    ws, _ = huge
    (ws / "small.txt").write_text("aaa\n")
    out = _growth(ws, """
        out["search"] = r("search_text", {"pattern": "a+"})
        out["one"] = r("search_text", {"pattern": "a+", "path": "huge.txt"})
        out["list"] = r("list_dir", {"glob": "**"})
    """)
    assert out["search"]["content"].startswith("small.txt:1: aaa") and "skipped 1" in out["search"]["content"]
    assert "skipped 1" in out["one"]["content"]
    assert "huge.txt  (300.0 MiB)" in out["list"]["content"]
    assert out["growth"] < BOUND


def test_edit_file_on_a_large_file_stays_bounded(tmp_path):
    big = tmp_path / "big.txt"
    line = b"x" * 79 + b"\n"
    with open(big, "wb") as fh:
        fh.write(line * (7 * MiB // len(line)))
        fh.write(b"THE ONE LINE\n")
        fh.write(line * 1000)
    (tmp_path / "small.txt").write_text("x\n")
    out = _growth(tmp_path, """
        out["res"] = r("edit_file", {"path": "big.txt", "old": "THE ONE LINE", "new": "changed"})
    """)
    assert out["res"]["ok"], out["res"]
    assert "-THE ONE LINE\n+changed\n" in out["res"]["content"]
    assert out["growth"] < 6 * Limits().edit_file_bytes + 32 * MiB  # a few copies of an 8 MiB text at most
    big.unlink()


# --- diffs: bounded time, still correct ----------------------------------------------------------

def apply_unified(old: str, diff: str) -> str:
    """A small patch applier: enough to check that every diff we show is a correct diff."""
    src = old.split("\n")
    src = [s + "\n" for s in src[:-1]] + ([src[-1]] if src[-1] else [])
    out, pos = [], 0
    lines = diff.split("\n")
    lines = [s + "\n" for s in lines[:-1]] + ([lines[-1]] if lines[-1] else [])
    i = 2 if lines and lines[0].startswith("---") else 0
    while i < len(lines):
        header = lines[i]
        assert header.startswith("@@ -"), header
        start = int(header[4:].split(",")[0].split(" ")[0])
        length = header[4:].split(" ")[0]
        start = start - 1 if "," not in length or int(length.split(",")[1]) else start
        out += src[pos:start]
        pos = start
        i += 1
        while i < len(lines) and not lines[i].startswith("@@"):
            tag, body = lines[i][0], lines[i][1:]
            if i + 1 < len(lines) and lines[i + 1] == "\\ No newline at end of file\n":
                body = body[:-1]
                i += 1
            if tag in " -":
                assert src[pos] == body, (pos, src[pos], body)
                pos += 1
            if tag in " +":
                out.append(body)
            i += 1
    return "".join(out + src[pos:])


def _cases():
    import random
    rng = random.Random(7)
    for n in range(300):
        words = [rng.choice(["a", "b", "c", "", "dd", "a b"]) for _ in range(rng.randrange(0, 40))]
        old = "\n".join(words) + rng.choice(["", "\n"])
        new = list(old)
        for _ in range(rng.randrange(1, 4)):
            at = rng.randrange(0, len(new) + 1)
            cut = rng.randrange(0, 6)
            new[at:at + cut] = rng.choice(["", "x", "\n", "y\nz\n", "a\n"])
        yield old, "".join(new)


@pytest.mark.parametrize("diff_lines", [2000, 3])
def test_diffs_apply_back_to_the_new_text(diff_lines):
    limits = Limits(diff_lines=diff_lines)  # 3: exercise the one-block form too
    for old, new in _cases():
        diff, added, removed = text_diff("f", old, new, limits)
        assert apply_unified(old, diff) == new, (old, new, diff)
        if old == new:
            assert diff == "" and added == removed == 0


def test_diff_of_adversarial_files_returns(tmp_path):
    n, k = 6000, 100  # difflib alone: ~10 s at 4,000 lines, minutes at 20,000 (its matcher is superlinear)
    old = "".join(f"{i % k}\n" for i in range(n))
    new = "".join(f"{(i // 2) % k}\n" for i in range(n))
    (tmp_path / "f.txt").write_text(old)
    (tmp_path / "small.txt").write_text("x\n")
    out = run_child(f"""
        seen = []
        tb.approver = lambda req: seen.append(req.diff) or True
        tb.policy = Policy("ask")
        out["res"] = r("write_file", {{"path": "f.txt", "content": {new!r}}})
        out["diff"] = seen[0]
    """, tmp_path, timeout=60)
    assert out["res"]["ok"]
    assert apply_unified(old, out["diff"]) == new
    assert (tmp_path / "f.txt").read_text() == new


def test_rss_helper_measures_growth(tmp_path):
    """The memory tests above could not fail if ru_maxrss did not see an allocation: check that it does.

    The measure can under-count by the free memory the allocator still holds (tens of MiB), far less than the
    300 MiB an unbounded read or diff of the test files would add.
    """
    out = _growth(tmp_path, """
        blob = b"x" * (128 * 1024 * 1024)
    """)
    assert out["growth"] > 64 * MiB  # the 300 MiB an unbounded tool would add could not go unseen
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss > 0


def test_whole_file_pass_finds_the_same_lines_as_line_by_line():
    """LineSearch skips files whose joined text has no match: it must never skip a line that matches."""
    import random
    import re

    from localspec.tools.files.regex import LineSearch
    patterns = [r"^a", r"a$", r"^$", r"\bab\b", r"\Bb", r"^a.*b$", r"a\s*$", r"^\s+", r"[^a]$", r"^(a|b)+$",
                r"(?i)^A", r"(?s)a.b", r"a\nb", r"\Aa", r"b\z", r"(?-m:^b)", r"\d$", r"^x?$", r"\W$", r"^\W"]
    rng = random.Random(3)
    for _ in range(400):
        text = "".join(rng.choice(["a", "b", " ", "\n", "\r\n", "ab", "1", "-", "\t", "\x0c", "x"])
                       for _ in range(rng.randrange(0, 30)))
        lines = text.splitlines()
        for pattern in patterns:
            want = [(no, line) for no, line in enumerate(lines, 1) if re.search(pattern.replace(r"\z", r"\Z"), line)]
            assert list(LineSearch(pattern).matches(lines)) == want, (pattern, text)
