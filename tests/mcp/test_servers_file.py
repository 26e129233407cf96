"""mcp.json parsing and the tool adapter's pure rules (names, schemas, results): fast table tests."""

from __future__ import annotations

import base64
import json

import pytest
from mcp.types import (
    BlobResourceContents,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)

from localspec.errors import ConfigError
from localspec.mcp.adapter import assign_names, clean_schema, to_tool_result
from localspec.mcp.servers_file import DEFAULT_TIMEOUT_S, default_config_path, load_mcp_config, parse_servers


def parse(obj, env=None):
    return parse_servers(obj, "mcp.json", env or {})


def test_stdio_and_http_servers_in_the_usual_format():
    servers = parse({"mcpServers": {
        "files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "${HOME}/notes"],
                  "env": {"TOKEN": "${TOK:-none}"}},
        "docs": {"type": "http", "url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ${TOK}"},
                 "timeout": 5, "alwaysAllow": ["x"]}}}, env={"HOME": "/home/me", "TOK": "t0k"})
    files, docs = servers
    assert files.transport == "stdio" and files.command == "npx"
    assert files.args == ("-y", "@modelcontextprotocol/server-filesystem", "/home/me/notes")
    assert files.env == {"TOKEN": "t0k"} and files.timeout_s == DEFAULT_TIMEOUT_S
    assert docs.transport == "http" and docs.headers == {"Authorization": "Bearer t0k"} and docs.timeout_s == 5
    assert docs.where == "https://example.com/mcp"  # never the headers: they may hold a token


@pytest.mark.parametrize("obj, message", [
    ([], "expected a JSON object"),
    ({"mcpServers": []}, "must be an object"),
    ({"mcpServers": {"a b": {"command": "x"}}}, "server name"),
    ({"mcpServers": {"a": "x"}}, "expected an object"),
    ({"mcpServers": {"a": {}}}, "either \"command\""),
    ({"mcpServers": {"a": {"command": "x", "url": "http://h"}}}, "either \"command\""),
    ({"mcpServers": {"a": {"command": 3}}}, "command must be a string"),
    ({"mcpServers": {"a": {"command": " "}}}, "command is empty"),
    ({"mcpServers": {"a": {"command": "x", "args": "y"}}}, "args must be a list"),
    ({"mcpServers": {"a": {"command": "x", "env": {"K": 1}}}}, "must be a string"),
    ({"mcpServers": {"a": {"url": "ftp://h"}}}, "http:// or https://"),
    ({"mcpServers": {"a": {"url": "http://h", "type": "sse"}}}, "not supported"),
    ({"mcpServers": {"a": {"command": "x", "timeout": 0}}}, "timeout must be"),
    ({"mcpServers": {"a": {"command": "x", "disabled": "yes"}}}, "disabled must be"),
    ({"mcpServers": {"a": {"command": "x", "args": ["${UNSET_VAR}"]}}}, "UNSET_VAR is not set"),
    ({"mcpServers": {"a": {"command": "x\u0000"}}}, "NUL"),
])
def test_bad_configs_are_one_line_errors(obj, message):
    with pytest.raises(ConfigError) as exc:
        parse(obj)
    assert message in str(exc.value) and "\n" not in str(exc.value)


def test_default_file_lives_in_the_config_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("LOCALSPEC_HOME", str(tmp_path))
    assert default_config_path() == tmp_path / "config" / "mcp.json"
    assert load_mcp_config().servers == ()  # absent default: no servers, no error
    with pytest.raises(ConfigError, match="file not found"):
        load_mcp_config(tmp_path / "nope.json")  # a file the user named must exist
    bad = tmp_path / "bad.json"
    bad.write_text("{oops")
    with pytest.raises(ConfigError, match="invalid JSON"):
        load_mcp_config(bad)
    default_config_path().parent.mkdir(parents=True)
    default_config_path().write_text(json.dumps({"mcpServers": {"x": {"command": "true", "disabled": True}}}))
    cfg = load_mcp_config()
    assert [s.name for s in cfg.servers] == ["x"] and cfg.enabled() == []


@pytest.mark.parametrize("listing, expected", [
    # own names unless a built-in or another server has the name too
    ([("notes", ["read_note", "write_note"])], {"read_note", "write_note"}),
    ([("notes", ["read_file", "x"])], {"notes__read_file", "x"}),
    ([("a", ["search"]), ("b", ["search", "fetch"])], {"a__search", "b__search", "fetch"}),
    # names a tool-call format cannot carry are reduced; a literal clash with a renamed one gets a suffix
    ([("s.1", ["do it!", "read_file"]), ("t", ["s_1__read_file"])], {"do_it_", "s_1__read_file", "s_1__read_file_2"}),
    ([("s", ["", "ok"])], {"ok"}),
])
def test_names_clash_rule(listing, expected):
    names = assign_names(listing, reserved={"read_file", "list_dir"})
    assert set(names.values()) == expected
    assert len(set(names.values())) == len(names)  # unique


def test_schema_is_cleaned_and_checked():
    fastmcp_style = {"type": "object", "title": "read_noteArguments", "$schema": "x",
                     "properties": {"title": {"title": "Title", "type": "string"}}, "required": ["title"]}
    schema, why = clean_schema(fastmcp_style)
    assert why is None
    assert schema == {"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]}
    assert clean_schema({"type": "object"})[0] == {"type": "object", "properties": {}}
    for bad in (None, [], {"type": "string"}, {"type": "object", "properties": {"a": {"type": "nonsense"}}},
                {"type": "object", "properties": {"p": {"type": "string", "description": "x" * 40000}}}):
        schema, why = clean_schema(bad)
        assert schema is None and why


def test_results_are_text_bounded_and_summarised():
    png = base64.b64encode(b"\x89PNG" + b"\x00" * 4096).decode()
    result = CallToolResult(content=[
        TextContent(text="hello"), ImageContent(data=png, mime_type="image/png"),
        EmbeddedResource(resource=TextResourceContents(uri="mem://a", text="inner text")),
        EmbeddedResource(resource=BlobResourceContents(uri="mem://b", blob=base64.b64encode(b"x" * 300).decode())),
        ResourceLink(uri="file:///x", name="x")])
    r = to_tool_result(result)
    assert r.ok
    assert r.content.splitlines() == ["hello", "[image: image/png, 4.0 KiB]", "[resource mem://a]", "inner text",
                                      "[resource mem://b: binary, 300 bytes]", "[resource link: file:///x (x)]"]
    long = to_tool_result(CallToolResult(content=[TextContent(text="y" * 5000)]), limit=1000)
    assert long.content.startswith("y" * 1000) and "4000 characters omitted" in long.content
    err = to_tool_result(CallToolResult(content=[TextContent(text="bad\nthing")], is_error=True))
    assert not err.ok and err.error == "bad thing" and err.for_model().startswith("Error: bad thing")
    structured = to_tool_result(CallToolResult(content=[], structured_content={"n": 1}))
    assert structured.content == '{"n": 1}'
    assert to_tool_result(CallToolResult(content=[])).content == "(no output)"
