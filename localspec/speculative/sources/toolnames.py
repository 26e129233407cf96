"""Which tool: where a call's name starts, propose the tool whose name and description share the most words with
the user's request ("What's the weather in Paris?" -> get_weather).

History and prompt lookup guess the tool of the previous call, which is wrong whenever the user asks for something
else; the request itself says which tool it wants. The tools come with the grammar (Constraint.tools).
"""

from __future__ import annotations

import re
from typing import Callable, Sequence

from localspec.speculative.constraint import Constraint
from localspec.speculative.draft import Candidate, CandidateDrafter
from localspec.speculative.indexes.text import TextIndex, context_piece, tail_text
from localspec.speculative.sources.spans import last_request

_NAME_START = (b'"name": "', b'"name":"')
_WORDS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
_STOP = frozenset("the a an and or of for in on at to from with by me my i you your is are be it this that what "
                  "whats please can could would will how which who when where do does get set use using".split())
_STEM = 4  # words sharing their first 4 letters count as the same word (search / searches, weather)


def words(text: str) -> set[str]:
    """Lower-case words of a name or a sentence, split at underscores and camelCase, short and common ones out."""
    return {w.lower() for w in _WORDS.findall(text) if len(w) > 2 and w.lower() not in _STOP}


def _hits(tool_words: set[str], request: set[str]) -> int:
    stems = {w[:_STEM] for w in request}
    return sum(1 for w in tool_words if w in request or (len(w) >= _STEM and w[:_STEM] in stems))


def rank_tools(tools: Sequence[dict], request: str) -> str | None:
    """The one tool that best matches the request (name words count twice), or None on a tie or no match."""
    req = words(request)
    scored = []
    for tool in tools:
        fn = tool.get("function", tool)
        name = fn.get("name")
        if not name:
            continue
        scored.append((2 * _hits(words(name), req) + _hits(words(fn.get("description") or ""), req), name))
    scored.sort(reverse=True)
    if not scored or scored[0][0] == 0 or (len(scored) > 1 and scored[1][0] == scored[0][0]):
        return None
    return scored[0][1]


class ToolNameDrafter(CandidateDrafter):
    name = "schema"  # drafted from the tools' definitions
    key = "tool"
    grammar_only = True
    picks = True  # judged on the odds of its pick (see HybridDrafter._best_candidate)

    def __init__(self, token_bytes: Callable[..., bytes], tokenize: Callable[[str], list[int]]):
        self._tokenize = tokenize
        self._piece = context_piece(token_bytes)
        self.index = TextIndex(self._piece)
        self._cache: tuple[object, str, str | None] = (None, "", None)

    def candidate(self, context: Sequence[int], max_len: int,
                  constraint: Constraint | None = None) -> Candidate | None:
        tools = constraint.tools if constraint is not None else None
        if not tools:
            return None
        # The whole context's text is only needed where a name starts.
        if not tail_text(self._piece, context).endswith(_NAME_START):
            return None
        self.index.sync(context)
        message, _ = last_request(bytes(self.index.text))
        if self._cache[:2] != (tools, message):
            self._cache = (tools, message, rank_tools(tools, message))
        name = self._cache[2]
        if not name:
            return None
        toks = self._tokenize(name)[:max_len]
        assert constraint is not None  # it gave the tools
        if constraint.valid_prefix(toks) != len(toks):
            return None
        return self.found(toks, 1)

    def reset(self) -> None:
        self.index = TextIndex(self._piece)
