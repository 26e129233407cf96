"""Can a draft model share the target's tokens? As strict as llama.cpp's common_speculative_are_compatible. A draft
that cannot (another family) still drafts, through text (speculative/sources/translated.py): `vocabulary_difference`
says why it must, and only a file without a vocabulary is refused."""

from __future__ import annotations

import os

from localspec.errors import IncompatibleDraftError
from localspec.runtime.model import Model, ModelSettings

MAX_VOCAB_SIZE_DIFFERENCE = 128
CHECK_START_TOKEN_ID = 5  # ids below this are special tokens that families renumber freely
# llama.cpp's enum llama_vocab_type (llama.h), so an error names the tokenizers instead of numbers.
VOCAB_TYPES = {0: "none (no vocabulary)", 1: "SentencePiece (SPM)", 2: "byte-level BPE", 3: "WordPiece (WPM)",
               4: "Unigram (UGM)", 5: "RWKV", 6: "PLaMo-2"}


def vocab_type_name(kind: int) -> str:
    return VOCAB_TYPES.get(kind, f"unknown type {kind}")


def vocabulary_difference(target: Model, draft: Model) -> str | None:
    """Why the draft's tokens are not the target's (it then drafts through text), or None when they are the same.
    IncompatibleDraftError when either has no vocabulary to translate through."""
    for role, m in (("draft", draft), ("target", target)):
        if m.vocab_type == 0:
            raise IncompatibleDraftError(f"{role} {m.path.name} has no vocabulary: it cannot be paired")
    try:
        check_models_compat(target, draft)
    except IncompatibleDraftError as exc:
        return str(exc)
    return None


def check_models_compat(target: Model, draft: Model) -> None:
    """Raise IncompatibleDraftError naming the first difference; return None when the pair can speculate."""
    t, d = target, draft
    name = f"draft {d.path.name} vs target {t.path.name}"
    if t.vocab_type != d.vocab_type:
        raise IncompatibleDraftError(f"{name}: vocabulary types differ (draft {vocab_type_name(d.vocab_type)}, "
                                     f"target {vocab_type_name(t.vocab_type)}): pick a draft model from the "
                                     "target's family")
    if t.add_bos != d.add_bos or t.add_eos != d.add_eos or t.bos != d.bos or t.eos != d.eos:
        raise IncompatibleDraftError(
            f"{name}: BOS/EOS handling differs (draft bos={d.bos} add_bos={d.add_bos} eos={d.eos} add_eos={d.add_eos};"
            f" target bos={t.bos} add_bos={t.add_bos} eos={t.eos} add_eos={t.add_eos})")
    diff = abs(t.n_vocab - d.n_vocab)
    if diff > MAX_VOCAB_SIZE_DIFFERENCE:
        raise IncompatibleDraftError(
            f"{name}: vocabulary sizes differ by {diff} ({d.n_vocab} vs {t.n_vocab}, at most "
            f"{MAX_VOCAB_SIZE_DIFFERENCE} allowed)")
    for tok in range(CHECK_START_TOKEN_ID, min(t.n_vocab, d.n_vocab)):
        a, b = t.token_text(tok), d.token_text(tok)
        if a != b:
            raise IncompatibleDraftError(f"{name}: token {tok} differs ({b!r} in draft, {a!r} in target)")


def check_draft_compat(target_path: str | os.PathLike, draft_path: str | os.PathLike) -> str | None:
    """File-level vocabulary_difference: loads only the two vocabularies (no weights), so it is cheap enough before
    any pairing."""
    vocab_only = ModelSettings(vocab_only=True)
    target = Model(target_path, vocab_only)
    draft = Model(draft_path, vocab_only)
    try:
        return vocabulary_difference(target, draft)
    finally:
        draft.close()
        target.close()
