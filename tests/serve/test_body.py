"""Pure decision: a JSON text's shape (depth outside strings, values counted anywhere) read from its bytes in
chunks, against a plain one-character-at-a-time reading, with chunk edges falling everywhere."""
import json
import random

import pytest

from localspec.serve import body


def _reference(text: bytes) -> tuple[int, int]:
    depth = top = values = 0
    inside = escaped = False
    for c in text:
        values += c in (0x5B, 0x7B, 0x2C)
        if inside:
            if escaped:
                escaped = False
            elif c == 0x5C:
                escaped = True
            elif c == 0x22:
                inside = False
        elif c == 0x22:
            inside = True
        elif c in (0x5B, 0x7B):
            depth += 1
            top = max(top, depth)
        elif c in (0x5D, 0x7D):
            depth -= 1
    return top, values


@pytest.mark.parametrize("chunk", [1, 2, 7, 64, 1 << 20])
def test_the_shape_matches_a_plain_reading(monkeypatch, chunk):
    monkeypatch.setattr(body, "SCAN_CHUNK", chunk)
    rng = random.Random(chunk)
    leaves = [[], {}, 'a\\"[{', "\\\\", "\\", '"]', 1, None, "x]\\\\"]
    for _ in range(400):
        value = rng.choice(leaves)
        for _ in range(rng.randint(0, 5)):
            value = rng.choice([[value], {'k\\"': value, "b": "[[{"}, [value, "\\\\\\", value]])
        text = json.dumps(value).encode()
        shape = body.json_shape(text)
        assert (shape.depth, shape.values) == _reference(text), text


def test_bodies_beyond_the_bounds_are_refused_before_they_are_built():
    from localspec.serve.api_errors import APIError

    with pytest.raises(APIError) as deep:
        body.parse_json(b"[" * 65 + b"]" * 65)
    assert deep.value.status == 400
    with pytest.raises(APIError) as wide:
        body.parse_json(b"[" + b"[]," * body.MAX_VALUES + b"[]]")
    assert wide.value.status == 413 and wide.value.code == "request_too_large"
    assert body.parse_json(b'{"a": "[[[[,,,,"}') == {"a": "[[[[,,,,"}
    assert body.parse_json(b"[" * 64 + b"]" * 64) is not None
