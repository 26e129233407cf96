"""Small real GGUF files that carry a real chat template and that template's marker tokens, for prompt tests.

Why: the project supports many chat formats, and only SmolLM2 and Gemma are small enough to be test fixtures. What
decides whether message text can become a marker token is the tokenizer (llama.cpp's special-token pass), so each
file here has a real llama.cpp SentencePiece vocabulary: the ordinary pieces of localspec/runtime/tinymodel.py, byte fallback,
and the format's markers typed as in the real model (CONTROL for turn markers, USER_DEFINED for Qwen's `<think>` and
`<tool_call>`). The weights are tiny and random: these files are for tokenizing, not for generating.

Templates come from llama.cpp's models/templates/ (MIT): those the package renders template-less files with are in
localspec/data/templates/ (prompting/families.py), the others in tests/data/templates/ (see its README).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import gguf
import numpy as np

from localspec.runtime.tinymodel import vocab_pieces

TEMPLATES = Path(__file__).parent / "data" / "templates"
PACKAGED = Path(__file__).parents[1] / "localspec" / "data" / "templates"


def template_path(name: str) -> Path:
    """A real template by file name: vendored for the tests, or packaged."""
    own = TEMPLATES / name
    return own if own.exists() else PACKAGED / name
_T = gguf.TokenType


@dataclass(frozen=True)
class Format:
    template: str  # file name in tests/data/templates/ or localspec/data/templates/
    control: tuple[str, ...]  # CONTROL marker texts (turn markers), besides <unk>, BOS and EOS
    user_defined: tuple[str, ...] = ()  # USER_DEFINED marker texts
    bos: str = "<s>"
    eos: str = "</s>"

    @property
    def markers(self) -> tuple[str, ...]:
        return self.control + self.user_defined

    def source(self) -> str:
        return template_path(self.template).read_text(encoding="utf-8")


QWEN_USER_DEFINED = ("<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>", "<think>", "</think>")

FORMATS = {
    "qwen2.5": Format("Qwen-Qwen2.5-7B-Instruct.jinja", ("<|im_start|>", "<|im_end|>", "<|endoftext|>"),
                      QWEN_USER_DEFINED[:4], bos="<|endoftext|>", eos="<|im_end|>"),
    "qwen3": Format("Qwen-Qwen3-0.6B.jinja", ("<|im_start|>", "<|im_end|>", "<|endoftext|>"), QWEN_USER_DEFINED,
                    bos="<|endoftext|>", eos="<|im_end|>"),
    "qwq": Format("Qwen-QwQ-32B.jinja", ("<|im_start|>", "<|im_end|>", "<|endoftext|>"), QWEN_USER_DEFINED,
                  bos="<|endoftext|>", eos="<|im_end|>"),
    "hermes3": Format("NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja",
                      ("<|im_start|>", "<|im_end|>", "<|begin_of_text|>"), QWEN_USER_DEFINED[:4],
                      bos="<|begin_of_text|>", eos="<|im_end|>"),
    "llama3.1": Format("meta-llama-Llama-3.1-8B-Instruct.jinja",
                       ("<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>", "<|eom_id|>", "<|python_tag|>"),
                       bos="<|begin_of_text|>", eos="<|eot_id|>"),
    "llama3.2": Format("meta-llama-Llama-3.2-3B-Instruct.jinja",
                       ("<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>", "<|eom_id|>", "<|python_tag|>"),
                       bos="<|begin_of_text|>", eos="<|eot_id|>"),
    "mistral-nemo": Format("mistralai-Mistral-Nemo-Instruct-2407.jinja",
                           ("[INST]", "[/INST]", "[TOOL_CALLS]", "[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]",
                            "[TOOL_RESULTS]", "[/TOOL_RESULTS]")),
    "devstral": Format("unsloth-mistral-Devstral-Small-2507.jinja",
                       ("[INST]", "[/INST]", "[TOOL_CALLS]", "[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]",
                        "[TOOL_RESULTS]", "[/TOOL_RESULTS]", "[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]", "[ARGS]",
                        "[IMG]")),
    "gemma2": Format("google-gemma-2-2b-it.jinja", ("<start_of_turn>", "<end_of_turn>"), bos="<bos>", eos="<eos>"),
    "gemma4": Format("google-gemma-4-31B-it.jinja",
                     ("<|turn>", "<turn|>", "<|tool>", "<tool|>", "<|tool_call>", "<tool_call|>", "<|tool_response>",
                      "<tool_response|>", '<|"|>', "<|channel>", "<channel|>", "<|think|>"), bos="<bos>", eos="<eos>"),
    "phi3.5": Format("microsoft-Phi-3.5-mini-instruct.jinja",
                     ("<|system|>", "<|user|>", "<|assistant|>", "<|end|>", "<|endoftext|>")),
    "granite3.3": Format("ibm-granite-granite-3.3-2B-Instruct.jinja",
                         ("<|start_of_role|>", "<|end_of_role|>", "<|end_of_text|>", "<|tool_call|>"),
                         eos="<|end_of_text|>"),
    "deepseek-r1-qwen": Format("deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja",
                               ("<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>", "<｜User｜>", "<｜Assistant｜>",
                                "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>", "<｜tool▁call▁begin｜>",
                                "<｜tool▁call▁end｜>", "<｜tool▁outputs▁begin｜>", "<｜tool▁outputs▁end｜>",
                                "<｜tool▁output▁begin｜>", "<｜tool▁output▁end｜>", "<｜tool▁sep｜>"),
                               ("<think>", "</think>"), bos="<｜begin▁of▁sentence｜>", eos="<｜end▁of▁sentence｜>"),
    "gpt-oss": Format("openai-gpt-oss-120b.jinja",
                      ("<|start|>", "<|message|>", "<|end|>", "<|channel|>", "<|return|>", "<|call|>",
                       "<|constrain|>", "<|startoftext|>", "<|endoftext|>"),
                      bos="<|startoftext|>", eos="<|return|>"),
}


def format_vocab(fmt: Format) -> tuple[list[str], list[int], list[float]]:
    """(tokens, types, scores) of `fmt`'s test vocabulary (ids 0..: <unk>, BOS, EOS, control markers,
    user-defined markers, 256 byte tokens, ordinary pieces)."""
    specials = ["<unk>", fmt.bos, fmt.eos] + [t for t in fmt.control if t not in (fmt.bos, fmt.eos)]
    tokens = specials + list(fmt.user_defined) + [f"<0x{b:02X}>" for b in range(256)]
    types = [_T.UNKNOWN] + [_T.CONTROL] * (len(specials) - 1) + [_T.USER_DEFINED] * len(fmt.user_defined) \
        + [_T.BYTE] * 256
    pieces = [p for p in vocab_pieces("a") if p not in tokens]
    scores = [0.0] * len(tokens) + [float(len(p)) for p in pieces]
    return tokens + pieces, [int(t) for t in types] + [int(_T.NORMAL)] * len(pieces), scores


def write_one_layer_gguf(path, name: str, fmt: Format, tensors: dict[str, np.ndarray], *, template: bool = True,
                         arch: str = "llama") -> Path:
    """A one-layer GGUF with `fmt`'s vocabulary and chat template (none without `template`) and the given weights
    (named as llama.cpp names them; shapes as numpy sees them). The weights are llama's: a file of another `arch`
    (its name and hyperparameters) loads vocabulary-only."""
    tokens, types, scores = format_vocab(fmt)
    n_vocab, n_embd = tensors["token_embd.weight"].shape
    assert n_vocab == len(tokens)
    w = gguf.GGUFWriter(str(path), arch)
    w.add_name(name)
    w.add_context_length(4096)
    w.add_embedding_length(n_embd)
    w.add_block_count(1)
    w.add_feed_forward_length(tensors["blk.0.ffn_gate.weight"].shape[0])
    w.add_head_count(2)
    w.add_head_count_kv(2)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_dimension_count(n_embd // 2)
    w.add_vocab_size(n_vocab)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_unk_token_id(0)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_add_bos_token(True)
    w.add_add_eos_token(False)
    w.add_add_space_prefix(False)
    if template:
        w.add_chat_template(fmt.source())
    for tensor, a in tensors.items():
        w.add_tensor(tensor, a)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return Path(path)


def layer_shapes(n_vocab: int, n_embd: int, n_ff: int) -> dict[str, tuple[int, ...]]:
    return {"token_embd.weight": (n_vocab, n_embd), "output_norm.weight": (n_embd,),
            "output.weight": (n_vocab, n_embd), "blk.0.attn_norm.weight": (n_embd,),
            "blk.0.ffn_norm.weight": (n_embd,), "blk.0.attn_q.weight": (n_embd, n_embd),
            "blk.0.attn_k.weight": (n_embd, n_embd), "blk.0.attn_v.weight": (n_embd, n_embd),
            "blk.0.attn_output.weight": (n_embd, n_embd), "blk.0.ffn_gate.weight": (n_ff, n_embd),
            "blk.0.ffn_up.weight": (n_ff, n_embd), "blk.0.ffn_down.weight": (n_embd, n_ff)}


def write_format_gguf(path, fmt: Format, *, template: bool = True, arch: str = "llama") -> Path:
    """A loadable GGUF with `fmt`'s template (unless not `template`) and markers (format_vocab) and small random
    weights (write_one_layer_gguf: another `arch` loads vocabulary-only)."""
    rng = np.random.default_rng(0)
    shapes = layer_shapes(len(format_vocab(fmt)[0]), 16, 32)
    return write_one_layer_gguf(path, "template-test", fmt,
                                {k: rng.standard_normal(v).astype(np.float32) * 0.1 for k, v in shapes.items()},
                                template=template, arch=arch)
