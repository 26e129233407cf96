"""Text-level prompt lookup on SmolLM2's real tokenizer: values copied from prose into JSON strings."""

from localspec.runtime.model import Model
from localspec.speculative.indexes.text import TextIndex
from localspec.speculative.sources.textlookup import TextLookupDrafter
from tests.speculative.fakes import as_pair


def _drafter(m: Model) -> TextLookupDrafter:
    return TextLookupDrafter(m.token_bytes, lambda t: m.tokenize(t, add_special=False, parse_special=False))


def test_copies_a_value_whose_tokens_differ_in_json(smollm2):
    m = Model(smollm2)
    d = _drafter(m)
    prose = m.tokenize("Please open src/utils.py and show me the top.\n", add_special=False)
    call = m.tokenize('{"path": "src', add_special=False)
    ctx = prose + call
    # Token-level lookup cannot see it: "src" after a quote is not the same token sequence as " src" in prose.
    assert m.detokenize(ctx[-1:]) == "src"
    toks, m_len = as_pair(d.candidate(ctx, 16))
    assert m.detokenize(toks) == "/utils.py"  # the rest of the word
    assert m_len >= 1
    # Past a word end, one more word, in a bucket of its own (0): values often stop there.
    toks, m_len = as_pair(d.candidate(ctx + toks, 16))
    assert (m.detokenize(toks), m_len) == (" and", 0)
    # Sentence punctuation ends a value.
    tail = m.tokenize(' the top', add_special=False)
    assert as_pair(d.candidate(ctx + tail, 16)) == ([], 0)


def test_no_match_no_draft_and_control_tokens_block_matches(smollm2):
    m = Model(smollm2)
    d = _drafter(m)
    assert as_pair(d.candidate(m.tokenize("completely unrelated words", add_special=False), 16)) == ([], 0)
    # "<|im_end|>" is a control token: the text before it cannot be continued across it.
    ctx = m.tokenize("say xyzzy<|im_end|>xyzzy", add_special=False)
    assert as_pair(d.candidate(ctx, 16)) == ([], 0)
    # Without the control token the same text is continued.
    ctx = m.tokenize("say xyzzy plugh\nxyzzy", add_special=False)
    assert m.detokenize(as_pair(d.candidate(ctx, 16))[0]) == " plugh"


def test_index_follows_rollbacks(smollm2):
    m = Model(smollm2)
    idx = TextIndex(m.token_bytes)
    a = m.tokenize("The quick brown fox", add_special=False)
    b = m.tokenize(" jumps over", add_special=False)
    idx.sync(a + b)
    idx.sync(a)  # rejected drafts roll back
    assert bytes(idx.text) == "The quick brown fox".encode()
    idx.sync(a + m.tokenize(" sleeps", add_special=False))
    assert bytes(idx.text) == "The quick brown fox sleeps".encode()
    assert idx.ends[-1] == len(idx.text)
