"""Tiny but real llama-architecture GGUF models, written on the fly (tests and `localspec doctor`'s self-test).

Why: the real models (SmolLM2, Gemma) take seconds to load and minutes to run on 2 cores. These files are a few
hundred KB, load in milliseconds, and go through exactly the same llama.cpp code paths (SentencePiece "llama"
tokenizer with byte fallback, ChatML control tokens, RoPE attention, SwiGLU FFN).

Weights are random but structured so greedy decoding is not degenerate: the output matrix maps each ordinary token's
embedding to the NEXT token of one long random cycle over the vocabulary, and the (random) transformer layers add
context-dependent perturbations on top. A draft (``base=..., noise=x``) copies a target's weights from its file and adds
relative Gaussian noise, so it agrees with the target on part, not all, of the greedy tokens.
"""

from __future__ import annotations

from pathlib import Path

import gguf
import numpy as np

CHATML = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)

UNK, BOS, EOS, IM_START, IM_END = 0, 1, 2, 3, 4
_SPECIALS = ["<unk>", "<s>", "</s>", "<|im_start|>", "<|im_end|>"]
_T = gguf.TokenType

_WORDS = (
    "the a an of to and in is it that for on with as at by from this be are was or not you your file name path "
    "read write list run command tool call result error ok yes no line text code data value key type string number "
    "true false null json arguments function content role user assistant system hello world test dir directory open "
    "close print return def class import python shell search find grep count size time date first last next new old "
    "make get set add remove delete update check show help use can will what how why when where which"
).split()
# Extra words only in vocab "b", so the two vocabularies differ in size and in token text.
_WORDS_B_EXTRA = "alpha beta gamma delta model draft target token speculative decode".split()
# JSON-ish pieces written the way SentencePiece sees them (space -> "▁").
_JSON = ['{"', '":', '",', '"}', '▁"', '▁{"', '":▁"', '",▁"', '"}}', '}}', '[{', '}]', '":▁', '{"name":▁"',
         '"arguments":▁{', 'name', 'arguments', 'true', 'false', 'null', '00', '10', '12', '20', '100', '\\n']


def vocab_pieces(vocab: str) -> list[str]:
    """Normal (multi-)character pieces after the specials and the 256 byte tokens, in id order."""
    if vocab not in ("a", "b"):
        raise ValueError(f"vocab must be 'a' or 'b', got {vocab!r}")
    words = list(_WORDS) if vocab == "a" else list(reversed(_WORDS)) + _WORDS_B_EXTRA
    singles = ["▁"] + [chr(c) for c in range(0x21, 0x7F)]
    seen: set[str] = set(singles)
    out = list(singles)
    # Every prefix of a multi-char piece is a token too, so SentencePiece merges can always reach the full piece.
    for w in ["▁" + w for w in words] + words + _JSON:
        for k in range(2, len(w) + 1):
            p = w[:k]
            if p not in seen:
                seen.add(p)
                out.append(p)
    return out


def _vocab(vocab: str) -> tuple[list[str], list[float], list[int]]:
    tokens = list(_SPECIALS) + [f"<0x{b:02X}>" for b in range(256)]
    types = [_T.UNKNOWN] + [_T.CONTROL] * 4 + [_T.BYTE] * 256
    scores = [0.0] * len(tokens)
    for p in vocab_pieces(vocab):
        tokens.append(p)
        types.append(_T.NORMAL)
        scores.append(float(len(p)))  # longer pieces win merges -> multi-char tokens
    return tokens, scores, [int(t) for t in types]


def _weights(rng: np.random.Generator, types: list[int], n_layer: int, n_embd: int, n_ff: int) -> dict[str, np.ndarray]:
    n_vocab = len(types)
    emb = rng.standard_normal((n_vocab, n_embd)).astype(np.float32)
    normal = np.array([i for i, t in enumerate(types) if t == _T.NORMAL])
    cycle = rng.permutation(normal)
    # output[v] = embedding of v's predecessor on the cycle: logits peak at the successor of the current token.
    out = 0.3 * rng.standard_normal((n_vocab, n_embd)).astype(np.float32)  # specials/bytes: never the argmax
    out[cycle] = emb[np.roll(cycle, 1)] + 0.3 * rng.standard_normal((len(cycle), n_embd)).astype(np.float32)
    w = {"token_embd.weight": emb, "output_norm.weight": np.ones(n_embd, np.float32), "output.weight": out}
    s = 1.0 / np.sqrt(n_embd)  # layer outputs comparable to the embedding -> context matters, not just the cycle
    for i in range(n_layer):
        b = f"blk.{i}."
        w[b + "attn_norm.weight"] = np.ones(n_embd, np.float32)
        w[b + "ffn_norm.weight"] = np.ones(n_embd, np.float32)
        for name, shape in (("attn_q", (n_embd, n_embd)), ("attn_k", (n_embd, n_embd)), ("attn_v", (n_embd, n_embd)),
                            ("attn_output", (n_embd, n_embd)), ("ffn_gate", (n_ff, n_embd)),
                            ("ffn_up", (n_ff, n_embd)), ("ffn_down", (n_embd, n_ff))):
            w[b + name + ".weight"] = (s * rng.standard_normal(shape)).astype(np.float32)
    return w


def _field(reader: gguf.GGUFReader, key: str):
    f = reader.get_field(key)
    if f is None:
        raise ValueError(f"base model lacks GGUF key {key}")
    return f.contents()


def _read_base(path: Path) -> dict:
    """Vocab, hyperparameters and weights of a model written by write_tiny_llama (the draft's starting point)."""
    r = gguf.GGUFReader(str(path))
    if _field(r, "general.architecture") != "llama":
        raise ValueError(f"base {path} is not a llama-architecture GGUF")
    return {
        "tokens": _field(r, "tokenizer.ggml.tokens"),
        "scores": _field(r, "tokenizer.ggml.scores"),
        "types": _field(r, "tokenizer.ggml.token_type"),
        "n_head": _field(r, "llama.attention.head_count"),
        "n_ctx_train": _field(r, "llama.context_length"),
        "n_layer": _field(r, "llama.block_count"),
        "weights": {t.name: np.array(t.data, dtype=np.float32) for t in r.tensors},
    }


def _perturb(w: dict[str, np.ndarray], rng: np.random.Generator, noise: float, n_layer: int) -> dict[str, np.ndarray]:
    out = {}
    for name, a in w.items():
        if name.startswith("blk.") and int(name.split(".")[1]) >= n_layer:
            continue  # draft drops the deeper layers
        if a.ndim == 2 and noise > 0:  # norms stay exactly 1
            a = a + noise * float(a.std()) * rng.standard_normal(a.shape).astype(np.float32)
        out[name] = a.astype(np.float32)
    return out


def write_tiny_llama(path, *, vocab: str = "a", seed: int = 0, n_layer: int = 2, n_embd: int = 64, n_head: int = 4,
                     n_ff: int = 128, n_ctx_train: int = 2048, dtype: str = "f32", base=None, noise: float = 0.0,
                     chat_template: str | None = CHATML, quiet_from: int | None = None) -> Path:
    """Write a tiny llama GGUF to `path` and return it as a Path.

    Same arguments -> byte-identical file. With `base` (path of another tiny model) the vocab, n_embd, n_ff, n_head,
    n_ctx_train and weights come from that file (`vocab`, `n_embd`, `n_ff`, `n_head`, `n_ctx_train` are ignored);
    the first `n_layer` layers are kept and every matrix gets Gaussian noise of std `noise` * (that matrix's std),
    drawn from `seed`.

    `quiet_from`: layers from this index on add nothing to the residual stream (zero output projections): the
    model costs all `n_layer` layers and predicts as its first `quiet_from` do, so a draft of those layers agrees
    on every token and is cheap: a pair whose draft pays on any machine (tests of what drafting shows).
    """
    if dtype not in ("f32", "f16"):
        raise ValueError(f"dtype must be 'f32' or 'f16', got {dtype!r}")
    if n_embd % n_head:
        raise ValueError(f"n_embd ({n_embd}) must be a multiple of n_head ({n_head})")
    rng = np.random.default_rng(seed)
    if base is not None:
        b = _read_base(Path(base))
        if n_layer > b["n_layer"]:
            raise ValueError(f"draft n_layer {n_layer} exceeds base's {b['n_layer']}")
        tokens, scores, types = b["tokens"], b["scores"], b["types"]
        n_head, n_ctx_train = b["n_head"], b["n_ctx_train"]
        weights = _perturb(b["weights"], rng, noise, n_layer)
        n_vocab, n_embd = weights["token_embd.weight"].shape
        n_ff = weights["blk.0.ffn_up.weight"].shape[0]
    else:
        tokens, scores, types = _vocab(vocab)
        weights = _weights(rng, types, n_layer, n_embd, n_ff)
        weights = _perturb(weights, rng, noise, n_layer) if noise else weights
    for i in range(quiet_from if quiet_from is not None else n_layer, n_layer):
        for name in ("attn_output", "ffn_down"):
            weights[f"blk.{i}.{name}.weight"] = np.zeros_like(weights[f"blk.{i}.{name}.weight"])

    path = Path(path)
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_name(f"tiny-llama-{vocab}-s{seed}-l{n_layer}" + ("-draft" if base is not None else ""))
    w.add_context_length(n_ctx_train)
    w.add_embedding_length(n_embd)
    w.add_block_count(n_layer)
    w.add_feed_forward_length(n_ff)
    w.add_head_count(n_head)
    w.add_head_count_kv(n_head)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_dimension_count(n_embd // n_head)
    w.add_rope_freq_base(10000.0)
    w.add_vocab_size(len(tokens))
    w.add_file_type(gguf.LlamaFileType.MOSTLY_F16 if dtype == "f16" else gguf.LlamaFileType.ALL_F32)
    add_tokenizer(w, tokens, scores, types, chat_template)
    big = np.float16 if dtype == "f16" else np.float32
    for name, a in weights.items():
        w.add_tensor(name, a.astype(np.float32 if a.ndim == 1 else big))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def add_tokenizer(w: gguf.GGUFWriter, tokens, scores, types, chat_template: str | None = CHATML) -> None:
    """The tiny SentencePiece vocabulary's keys (runtime/tinyheads.py writes its heads with them too)."""
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_unk_token_id(UNK)
    w.add_bos_token_id(BOS)
    w.add_eos_token_id(EOS)
    w.add_eot_token_id(IM_END)  # llama.cpp puts EOT into the end-of-generation set
    w.add_add_bos_token(True)
    w.add_add_eos_token(False)
    w.add_add_space_prefix(False)  # like Gemma: no phantom leading space, so detokenize(tokenize(s)) == s
    if chat_template is not None:
        w.add_chat_template(chat_template)


def tiny_pair(dir) -> tuple[Path, Path]:
    """Target (seed 0, f32, 2 layers) and its draft (1-layer copy, noise 0.6: ~70% greedy agreement) in `dir`."""
    d = Path(dir)
    d.mkdir(parents=True, exist_ok=True)
    target = write_tiny_llama(d / "tiny-target.gguf")
    draft = write_tiny_llama(d / "tiny-draft.gguf", base=target, noise=0.6, n_layer=1, seed=1)
    return target, draft
