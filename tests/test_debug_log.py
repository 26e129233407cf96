"""The debug log in one process (tests/mcp/test_debug_log.py runs it end to end): off unless LOCALSPEC_LOG asks,
then a private file in the log folder that the localspec loggers write to, warnings still on the terminal."""

from __future__ import annotations

import logging
import stat

import pytest

from localspec import debug_log


@pytest.fixture
def fresh_log(monkeypatch, tmp_path):
    monkeypatch.setenv("LOCALSPEC_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(debug_log, "_handler", None)
    root = logging.getLogger("localspec")
    handlers, level = list(root.handlers), root.level
    yield tmp_path / "home" / "logs" / "localspec.log"
    for h in root.handlers[len(handlers):]:
        h.close()
    root.handlers[:] = handlers
    root.setLevel(level)


def test_off_unless_asked(fresh_log):
    assert debug_log.configure({}) is None and debug_log.configure({"LOCALSPEC_LOG": "loud"}) is None
    assert not fresh_log.exists()


def test_debug_writes_a_private_file_and_warnings_still_reach_the_terminal(fresh_log, capsys):
    assert debug_log.configure({"LOCALSPEC_LOG": "DEBUG"}) == fresh_log == debug_log.log_file()
    logging.getLogger("localspec.drafting").debug("gate window prose: 16 proposals")
    logging.getLogger("localspec.serve").warning("generation failed")
    for h in logging.getLogger("localspec").handlers:
        h.flush()
    lines = fresh_log.read_text().splitlines()
    assert lines[0].endswith(" DEBUG localspec.drafting: gate window prose: 16 proposals")
    assert lines[1].endswith(" WARNING localspec.serve: generation failed")
    assert stat.S_IMODE(fresh_log.stat().st_mode) == 0o600
    assert stat.S_IMODE(fresh_log.parent.stat().st_mode) == 0o700
    err = capsys.readouterr().err
    assert "generation failed" in err and "gate window" not in err
