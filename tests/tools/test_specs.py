"""specs() schemas and argument handling: every bad input becomes ok=False with a one-line error."""
import json

import pytest

from localspec.tools import Policy, Toolbox, ToolResult

NAMES = ["read_file", "list_dir", "search_text", "write_file", "edit_file", "run_shell"]
REQUIRED = {"read_file": ["path"], "list_dir": [], "search_text": ["pattern"], "write_file": ["path", "content"],
            "edit_file": ["path", "old", "new"], "run_shell": ["command"]}
JSON_TYPES = {"string", "integer", "number", "boolean", "object", "array", "null"}


@pytest.fixture
def tb(tmp_path):
    (tmp_path / "f.txt").write_text("x\n")
    return Toolbox(workspace=tmp_path, policy=Policy(mode="auto"))


def walk(node):
    yield node
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "properties":
                for sub in value.values():
                    yield from walk(sub)
            elif isinstance(value, (dict, list)):
                yield from walk(value)
    elif isinstance(node, list):
        for item in node:
            yield from walk(item)


def test_specs_shape(tb):
    specs = tb.specs()
    assert [s["function"]["name"] for s in specs] == NAMES
    json.dumps(specs)  # plain JSON
    for spec in specs:
        assert spec["type"] == "function" and set(spec["function"]) == {"name", "description", "parameters"}
        assert spec["function"]["description"]
        params = spec["function"]["parameters"]
        assert params["type"] == "object" and params["additionalProperties"] is False
        assert params["required"] == REQUIRED[spec["function"]["name"]]
        assert set(params["required"]) <= set(params["properties"])
        for prop in params["properties"].values():
            assert prop["type"] in JSON_TYPES and prop["description"]
            assert "anyOf" not in prop and prop.get("default", "") is not None
        for node in walk(params):
            if isinstance(node, dict):
                assert "title" not in node and "$defs" not in node and "$ref" not in node


def test_specs_keep_constraints(tb):
    props = {s["function"]["name"]: s["function"]["parameters"]["properties"] for s in tb.specs()}
    assert props["read_file"]["start_line"] == {"type": "integer", "description": props["read_file"]["start_line"]
                                               ["description"], "minimum": 1}
    assert props["run_shell"]["timeout_s"]["maximum"] == 600
    assert props["list_dir"]["path"]["default"] == "."


@pytest.mark.parametrize("name,arguments,needles", [
    ("nope", {}, ["unknown tool 'nope'", "read_file"]),
    ("read_file", {}, ["missing required argument 'path'"]),
    ("read_file", {"path": 5}, ["argument 'path'", "valid string"]),
    ("read_file", {"path": "f.txt", "start_line": "two"}, ["argument 'start_line'", "integer"]),
    ("read_file", {"path": "f.txt", "start_line": 1.5}, ["argument 'start_line'"]),
    ("read_file", {"path": "f.txt", "bogus": 1}, ["unknown argument 'bogus'"]),
    ("read_file", "{\"path\": ", ["not valid JSON"]),
    ("read_file", "[1, 2]", ["must be a JSON object", "list"]),
    ("read_file", 42, ["must be a JSON object", "int"]),
    ("search_text", {"pattern": "x", "max_results": 0}, ["argument 'max_results'"]),
    ("edit_file", {"path": "f.txt", "old": "x"}, ["missing required argument 'new'"]),
    ("write_file", {"path": "f.txt", "content": None}, ["argument 'content'"]),
    ("run_shell", {"command": ["ls"]}, ["argument 'command'"]),
])
def test_bad_input_never_raises(tb, name, arguments, needles):
    res = tb.call(name, arguments)
    assert isinstance(res, ToolResult) and res.ok is False and res.content == ""
    assert "\n" not in res.error
    for needle in needles:
        assert needle in res.error, res.error


def test_json_string_arguments(tb):
    res = tb.call("read_file", json.dumps({"path": "f.txt", "start_line": "1"}))
    assert res.ok and res.content.startswith("x\n")
    assert tb.call("list_dir", "").ok and tb.call("list_dir", None).ok


def test_for_model_text(tb):
    assert tb.call("read_file", {"path": "f.txt"}).for_model() == "x\n"
    bad = tb.call("read_file", {"path": "missing"})
    assert bad.for_model().startswith("Error: read_file: ") and bad.tool == "read_file"
