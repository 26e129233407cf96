"""The tiny GGUF factory produces models real llama.cpp loads, tokenizes with, and decodes non-degenerately."""

from __future__ import annotations

import ctypes

import gguf
import llama_cpp as L
import numpy as np
import pytest

from localspec.runtime.tinymodel import CHATML, IM_END, IM_START, tiny_pair, write_tiny_llama

PROMPTS = ["hello world", "read the file name", '{"name": "read_file", "arguments": {"path": "a.txt"}}',
           "what is the first line of the test", "list the directory and count the files"]


@ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p)
def _quiet(level, text, user):  # module-level so the callback is never garbage collected
    pass


L.llama_log_set(_quiet, ctypes.c_void_p())
L.llama_backend_init()


class Tiny:
    """Minimal low-level llama.cpp wrapper, just enough to check the models (the real one lives in localspec.runtime)."""

    def __init__(self, path):
        self.model = L.llama_model_load_from_file(str(path).encode(), L.llama_model_default_params())
        assert self.model, f"llama.cpp failed to load {path}"
        self.vocab = L.llama_model_get_vocab(self.model)
        self.n_vocab = L.llama_vocab_n_tokens(self.vocab)
        cp = L.llama_context_default_params()
        # one thread: tiny matrices, and spinning worker threads crawl when the 2 CPUs are shared
        cp.n_ctx, cp.n_batch, cp.n_threads, cp.n_threads_batch = 256, 256, 1, 1
        self.ctx = L.llama_init_from_model(self.model, cp)
        assert self.ctx

    def close(self):
        L.llama_free(self.ctx)
        L.llama_model_free(self.model)

    def tokenize(self, text: str, add_special=True, parse_special=False) -> list[int]:
        b = text.encode()
        buf = (L.llama_token * (len(b) + 8))()
        n = L.llama_tokenize(self.vocab, b, len(b), buf, len(buf), add_special, parse_special)
        assert n >= 0
        return list(buf[:n])

    def piece(self, tok: int) -> str:
        buf = ctypes.create_string_buffer(64)
        n = L.llama_token_to_piece(self.vocab, tok, buf, len(buf), 0, True)
        return buf.raw[:n].decode("utf-8", errors="replace")

    def detokenize(self, toks: list[int]) -> str:
        arr = (L.llama_token * len(toks))(*toks)
        buf = ctypes.create_string_buffer(len(toks) * 16 + 16)
        n = L.llama_detokenize(self.vocab, arr, len(toks), buf, len(buf), True, False)
        assert n >= 0
        return buf.raw[:n].decode()

    def greedy(self, prompt: list[int], n: int) -> list[int]:
        """Greedy tokens after `prompt`, ignoring end-of-generation (we want a fixed length to compare)."""
        L.llama_memory_clear(L.llama_get_memory(self.ctx), True)
        out, toks = [], list(prompt)
        for _ in range(n):
            arr = (L.llama_token * len(toks))(*toks)
            assert L.llama_decode(self.ctx, L.llama_batch_get_one(arr, len(toks))) == 0
            logits = np.ctypeslib.as_array(L.llama_get_logits_ith(self.ctx, -1), shape=(self.n_vocab,))
            toks = [int(logits.argmax())]
            out.append(toks[0])
        return out


@pytest.fixture(scope="module")
def pair(tiny_pair_paths):
    return tiny_pair_paths


@pytest.fixture(scope="module")
def target(pair):
    m = Tiny(pair[0])
    yield m
    m.close()


@pytest.fixture(scope="module")
def draft(pair):
    m = Tiny(pair[1])
    yield m
    m.close()


def test_files_small_and_deterministic(tmp_path):
    """What keeps the tiny models quick to write and to decode in every test is their size: a few hundred
    thousand weights (the speed itself is not asserted here: timings on a shared CPU belong in benchmarks)."""
    target, draft = tiny_pair(tmp_path / "p")
    b = write_tiny_llama(tmp_path / "b.gguf", vocab="b")
    h = write_tiny_llama(tmp_path / "h.gguf", dtype="f16")
    again = write_tiny_llama(tmp_path / "again.gguf")
    for p in (target, draft, b, h, again):
        assert p.stat().st_size < 2_000_000, (p, p.stat().st_size)
        weights = sum(int(np.prod(t.shape)) for t in gguf.GGUFReader(str(p)).tensors)
        assert weights < 300_000, (p, weights)
    assert h.stat().st_size < target.stat().st_size  # f16 matrices really are f16
    assert again.read_bytes() == target.read_bytes()


def test_metadata(pair):
    r = gguf.GGUFReader(str(pair[0]))
    get = lambda k: r.get_field(k).contents()  # noqa: E731
    assert get("general.architecture") == "llama"
    assert get("tokenizer.ggml.model") == "llama"
    assert get("tokenizer.ggml.add_bos_token") is True and get("tokenizer.ggml.add_eos_token") is False
    assert get("tokenizer.chat_template") == CHATML
    assert get("llama.block_count") == 2 and get("llama.embedding_length") == 64
    assert gguf.GGUFReader(str(pair[1])).get_field("llama.block_count").contents() == 1


def test_models_load_with_specials(target, draft):
    for m in (target, draft):
        assert m.n_vocab == target.n_vocab > 256 + 5
        assert L.llama_vocab_bos(m.vocab) == 1 and L.llama_vocab_eos(m.vocab) == 2
        assert L.llama_vocab_is_eog(m.vocab, IM_END) and L.llama_vocab_is_eog(m.vocab, 2)
        assert not L.llama_vocab_is_eog(m.vocab, IM_START)
        assert L.llama_vocab_is_control(m.vocab, IM_START)
        assert L.llama_model_chat_template(m.model, None).decode() == CHATML
    assert target.tokenize("<|im_start|>user", add_special=False, parse_special=True)[0] == IM_START


@pytest.mark.parametrize("text", ["hello world", "héllo ✓", '{"name": "read_file", "arguments": {"path": "a b.txt"}}',
                                  "line one\nline\ttwo  spaced", "日本語 🙂 ~`|\\"])
def test_tokenize_roundtrip(target, text):
    toks = target.tokenize(text)
    assert toks[0] == 1  # BOS added
    assert target.detokenize(toks) == text


def test_tokenizer_makes_multichar_pieces(target):
    toks = target.tokenize('{"name": "the file"}', add_special=False)
    pieces = [target.piece(t) for t in toks]
    assert any(len(p) > 2 for p in pieces), pieces
    assert len(toks) < len('{"name": "the file"}') / 2


def test_greedy_not_degenerate(target):
    for prompt in PROMPTS[:3]:
        out = target.greedy(target.tokenize(prompt), 32)
        assert len(set(out)) > 4, out


def test_draft_agrees_partly(target, draft):
    same = total = 0
    for prompt in PROMPTS:
        toks = target.tokenize(prompt)
        # Compare next-token predictions along the target's own greedy path (what speculative decoding checks).
        path = target.greedy(toks, 24)
        seq = toks + path
        for i in range(len(toks), len(seq)):
            same += draft.greedy(seq[:i], 1)[0] == seq[i]
            total += 1
    rate = same / total
    print(f"draft/target greedy agreement: {same}/{total} = {rate:.2f}")
    assert 0.4 <= rate <= 0.9, rate


def test_vocab_a_and_b_differ(tmp_path):
    a, b = Tiny(write_tiny_llama(tmp_path / "a.gguf")), Tiny(write_tiny_llama(tmp_path / "b.gguf", vocab="b"))
    try:
        assert a.n_vocab != b.n_vocab
        differ = [i for i in range(5, min(a.n_vocab, b.n_vocab)) if a.piece(i) != b.piece(i)]
        assert differ, "vocab a and b have identical token text"
    finally:
        a.close(), b.close()
    ra, ra2 = (gguf.GGUFReader(str(p)).get_field("tokenizer.ggml.tokens").contents()
               for p in (tmp_path / "a.gguf", write_tiny_llama(tmp_path / "a2.gguf", seed=7)))
    assert ra == ra2  # same vocab letter -> identical tokens whatever the seed


def test_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match="vocab"):
        write_tiny_llama(tmp_path / "x.gguf", vocab="z")
    with pytest.raises(ValueError, match="dtype"):
        write_tiny_llama(tmp_path / "x.gguf", dtype="q4")
    target = write_tiny_llama(tmp_path / "t.gguf")
    with pytest.raises(ValueError, match="n_layer"):
        write_tiny_llama(tmp_path / "d.gguf", base=target, n_layer=3)
