"""The built engine copies a file's text into an edit_file call (across JSON escaping), on a real model, and its
output stays exactly that of target-only decoding (F16 target)."""

from __future__ import annotations

import json

from localspec.prompting.prompt import chat_prompt_tokens
from localspec.runtime.context import ContextSettings
from localspec.runtime.pair import load_pair
from localspec.speculative.builder import build_engine
from localspec.speculative.costs import CostModel
from localspec.speculative.decoder import GenParams
from localspec.speculative.drafting import TARGET_ONLY, DraftingConfig
from localspec.speculative.grammar import GrammarConstraint, tool_call_grammar
from localspec.speculative.sources.copy import escape
from localspec.speculative.sources.past_calls import CallHistory

FILE = ('def restock(self, sku: str, amount: int) -> int:\n'
        '    if amount <= 0:\n        raise ValueError("amount must be positive")\n'
        '    item = self.items[sku]\n    item.stock += amount\n    self.log.append(("restock", sku, amount))\n'
        '    return item.stock\n')
TOOLS = [{"type": "function", "function": {"name": name, "parameters": {
    "type": "object", "properties": {k: {"type": "string"} for k in keys}, "required": list(keys)}}}
    for name, keys in (("read_file", ("path",)), ("edit_file", ("path", "old", "new")))]
MESSAGES = [
    {"role": "user", "content": "Show me shop.py."},
    {"role": "assistant", "content": "", "tool_calls": [{"id": "r1", "type": "function", "function": {
        "name": "read_file", "arguments": json.dumps({"path": "shop.py"})}}]},
    {"role": "tool", "tool_call_id": "r1", "name": "read_file", "content": FILE},
    {"role": "user", "content": "In shop.py, replace the whole restock method so that it also logs the price."},
]
CUT = FILE.index("    item")
# The call so far: the model has started copying the method into `old` (the grammar has consumed this much).
HEAD = '<tool_call>\n{"name": "edit_file", "arguments": {"path": "shop.py", "old": "' + escape(FILE[:CUT])


def _quiet_costs() -> CostModel:
    """The costs the engine measures on a quiet machine (SmolLM2 F16, benchmarks/README.md: 24.9 ms a pass plus
    3.5 ms a row): on a CPU shared with other jobs the measured fit swings, and with it where drafts are cut."""
    costs = CostModel()
    for _ in range(16):
        for n, rows in ((1, 1), (4, 4), (8, 8), (16, 1), (32, 32), (64, 8)):
            costs.observe(n, rows, 0.0249 + 0.00346 * n)
    return costs


def _run(engine, m, prompt):
    cons = GrammarConstraint(m, tool_call_grammar(TOOLS, prefix="<tool_call>\n", suffix="\n</tool_call>"))
    head = m.tokenize(HEAD, add_special=False)
    assert cons.consume_valid_prefix(head) == len(head)
    return engine.generate(prompt + head, GenParams(max_tokens=160, draft_max=64), constraint=cons)


def test_engine_drafts_a_long_copy_inside_edit_file_and_stays_exact(smollm2_f16):
    pair = load_pair(smollm2_f16, ctx=ContextSettings(n_ctx=4096))
    m = pair.target
    prompt = chat_prompt_tokens(m, MESSAGES, TOOLS)
    ref = _run(build_engine(pair, TARGET_ONLY), m, prompt)
    spec = build_engine(pair, DraftingConfig(drafters=("schema", "history", "ngram")), history=CallHistory(), costs=_quiet_costs())
    got = _run(spec, m, prompt)
    assert got.text == ref.text
    # The model does copy the method on for three lines (else this test could not tell anything) ...
    assert got.text.startswith(escape(FILE[CUT:FILE.index('("restock"')])), got.text[:200]
    # ... and the copy was drafted in long runs (a pass ends with the target's own token, so a run of drafted
    # tokens is one accepted draft), tracked under the copy key for copies into `old`.
    assert ("copy:old", 4) in spec.drafter.rates.learned  # copies were drafted (and judged) five tokens deep and more
    runs, run = [], 0
    for origin in got.origins:
        run = run + 1 if origin == "ngram" else 0
        runs.append(run)
    # At least a whole line of the file in one accepted draft (a line's start is priced as a place where the copy
    # may stop, so a draft may end there).
    line = len(m.tokenize(escape(FILE[CUT:FILE.index("\n", CUT) + 1]), add_special=False, parse_special=False))
    assert line >= 8 and max(runs) >= line, (line, got.origins)


def test_engine_memory_persists_across_requests_and_is_seeded_from_history(smollm2_f16):
    """The copy drafter's memory belongs to the engine (serve answers every request with one engine) and starts
    with the persisted calls of earlier sessions."""
    pair = load_pair(smollm2_f16, ctx=ContextSettings(n_ctx=2048))
    history = CallHistory()
    history.add(json.dumps({"name": "write_file", "arguments": {"path": "shop.py", "content": FILE}}), "write_file")
    engine = build_engine(pair, DraftingConfig(drafters=("ngram",)), history=history)
    copy = engine.drafter.sources[-1]
    follow, length = copy.memory.find(b"x\n    if amount <= 0:\n", 32)
    assert follow == b'        raise ValueError("amount' and length == len("\n    if amount <= 0:\n")
