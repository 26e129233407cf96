"""Pure decision: which JSON Schemas allow no finite value (serve/satisfiable.py), as a table."""
import pytest

from localspec.serve.satisfiable import never_satisfied

SELF = {"$ref": "#"}


@pytest.mark.parametrize("schema", [
    SELF,
    {"type": "object", "properties": {"x": SELF}, "required": ["x"]},
    {"type": "object", "properties": {"y": {"type": "integer"}, "x": SELF}, "required": ["y", "x"]},
    {"type": "array", "items": SELF, "minItems": 1},
    {"type": "array", "prefixItems": [{"type": "string"}, SELF], "minItems": 2},
    {"anyOf": [SELF, {"type": "array", "items": SELF, "minItems": 1}]},
    {"allOf": [{"type": "object"}, SELF]},
    {"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"},
    {"definitions": {"n": {"type": "object", "properties": {"next": {"$ref": "#/definitions/n"}},
                           "required": ["next"]}}, "$ref": "#/definitions/n"},
    {"type": "object", "properties": {"a~b/c": SELF}, "required": ["a~b/c"]},
    {"type": "object", "additionalProperties": SELF, "required": ["anything"]},
    {"enum": []},
    False,
    {"type": "object", "properties": {"x": False}, "required": ["x"]},
])
def test_schemas_without_a_finite_value(schema):
    assert never_satisfied(schema).startswith("no finite value")


@pytest.mark.parametrize("schema", [
    {}, True, {"type": "string"}, {"type": "string", "pattern": "^a+$"},
    {"type": "object", "properties": {"x": SELF}},  # optional: {} ends it
    {"type": "object", "properties": {"v": {"type": "integer"}, "kids": {"type": "array", "items": SELF}},
     "required": ["v"]},
    {"anyOf": [SELF, {"type": "null"}]},
    {"type": ["object", "null"], "properties": {"x": SELF}, "required": ["x"]},
    {"properties": {"x": SELF}, "required": ["x"]},  # no type: a number satisfies it
    {"type": "array", "items": SELF},  # [] ends it
    {"type": "array", "prefixItems": [{"type": "string"}], "items": SELF, "minItems": 1},
    {"$defs": {"leaf": {"type": "string"}, "node": {"anyOf": [{"$ref": "#/$defs/leaf"},
                                                              {"type": "array", "items": {"$ref": "#/$defs/node"}}]}},
     "$ref": "#/$defs/node"},
    {"$ref": "#/$defs/missing"},  # not ours to judge: llguidance says what is wrong with it
    {"$ref": "https://example.com/schema.json"},
    {"type": "object", "properties": {"a": {"enum": ["x"]}}, "required": ["a", 5]},
])
def test_schemas_with_a_finite_value(schema):
    assert never_satisfied(schema) == ""


def test_the_reason_names_the_cycle():
    why = never_satisfied({"$defs": {"a": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"})
    assert "#/$defs/a" in why
