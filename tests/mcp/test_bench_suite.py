"""benchmarks/mcp.jsonl is a valid bench suite whose tools are the test MCP server's, as the agent sees them now
(rerun benchmarks/make_mcp.py when this fails after a change to the server or the adapter)."""

from __future__ import annotations

import pytest

import importlib.util
from pathlib import Path

from localspec.bench.suite import load_suite

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow  # real MCP server processes
def test_mcp_suite_tools_come_from_the_server():
    spec = importlib.util.spec_from_file_location("make_mcp", ROOT / "benchmarks" / "make_mcp.py")
    make_mcp = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make_mcp)
    live = make_mcp.mcp_tools()
    cases = load_suite(ROOT / "benchmarks" / "mcp.jsonl")
    assert len(cases) == 48 and len({c.session for c in cases}) == 6
    assert all(c.tools == live for c in cases)
    names = {t["function"]["name"] for t in live}
    assert {"read_note", "write_note", "notes__read_file", "dump"} <= names  # incl. a renamed clash
    assert {g["name"] for c in cases for g in c.ground_truth} <= names
    assert [c.ground_truth for c in cases] == [r["ground_truth"] for r in make_mcp.build(live)]  # deterministic
