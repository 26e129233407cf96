"""Reasoning ("thinking") models: where a reply's reasoning ends and its answer begins, and the template switch.

Qwen3, QwQ and the DeepSeek-R1 distills write `<think>reasoning</think>answer`. Some templates open the block in
the prompt itself (DeepSeek-R1's generation prompt ends with `<think>\\n`, so the model's output starts inside the
reasoning and only `</think>` appears); others leave it to the model (Qwen3), which may also write an empty block
when thinking is switched off. The splitter takes the text as it streams and says, piece by piece, which is which,
holding back only what could still be the start of a tag.

History: the answer goes back into the conversation as `content` and the reasoning as `reasoning_content`, so
each template decides what to keep: Qwen3's keeps the reasoning of the tool-call steps after the last user
message and drops the rest; DeepSeek-R1's never renders it; templates that know nothing of reasoning never see it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

OPEN, CLOSE = "<think>", "</think>"

# How the reply starts, from the rendered prompt: "open" (the prompt opened a think block the model continues),
# "maybe" (a reasoning template; the model decides whether to open one), "off" (no reasoning expected).
OPEN_STATE, MAYBE, OFF = "open", "maybe", "off"


def template_reasons(template: str | None) -> bool:
    """Whether a chat template belongs to a model that writes `<think>` blocks (it must handle them in history)."""
    return bool(template and CLOSE in template)


def template_switch(template: str | None) -> bool:
    """Whether the template reads the `enable_thinking` variable (Qwen3, llama.cpp's DeepSeek-R1 templates)."""
    return bool(template and "enable_thinking" in template)


def template_vars(template: str | None, thinking: bool) -> dict:
    """Extra template variables for the thinking switch. Always explicit for templates that read it: llama.cpp's
    DeepSeek-R1 template closes the think block unless `enable_thinking` is set."""
    return {"enable_thinking": thinking} if template_switch(template) else {}


def no_think(messages: list[dict], template: str | None, thinking: bool) -> list[dict]:
    """Qwen3's soft switch for a reasoning template without `enable_thinking`: `/no_think` at the end of the last
    user message (a copy: the stored conversation keeps what the user wrote)."""
    if thinking or not template_reasons(template) or template_switch(template):
        return messages
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if m.get("role") == "user" and isinstance(m.get("content"), str):
            return messages[:i] + [{**m, "content": m["content"] + " /no_think"}] + messages[i + 1:]
    return messages


def prompt_state(template: str | None, prompt_tail: str) -> str:
    """How the reply begins, given the end of the rendered prompt (`prompt_tail`: its last few tokens as text)."""
    if not template_reasons(template):
        return OFF
    tail = prompt_tail.rstrip()
    if tail.endswith(OPEN):
        return OPEN_STATE
    if tail.endswith(CLOSE):  # the template wrote an empty block: thinking is off for this reply
        return OFF
    return MAYBE


def reply_state(model, template: str | None, prompt: list[int]) -> str:
    """prompt_state of a tokenized prompt (its last tokens are enough: the generation prompt ends it)."""
    if not template_reasons(template):
        return OFF
    tail = b"".join(model.token_bytes(t) for t in prompt[-8:]).decode("utf-8", "replace")
    return prompt_state(template, tail)


def _partial(buf: str, tag: str) -> int:
    """Length of the longest tail of `buf` that is a proper prefix of `tag` (it could still become the tag)."""
    for k in range(min(len(tag) - 1, len(buf)), 0, -1):
        if buf.endswith(tag[:k]):
            return k
    return 0


@dataclass
class ReasoningSplitter:
    """Feed generated text; get (kind, text) pieces, kind "reasoning" or "text" (the answer).

    `state` is "start" (nothing seen yet but blanks), "reasoning", "after" (just past `</think>`: blank lines are
    dropped) or "answer". Leading and trailing blank lines of the reasoning and leading ones of the answer are not
    passed on, as the templates strip them when they render the turn back."""

    opened: bool = False  # the prompt already opened the block
    state: str = "start"
    reasoning: str = ""
    answer: str = ""
    _buf: str = ""
    _blank: str = field(default="", repr=False)  # held whitespace inside the reasoning (dropped if it ends it)

    def __post_init__(self):
        if self.opened:
            self.state = "reasoning"

    @property
    def in_reasoning(self) -> bool:
        return self.state in ("start", "reasoning") if self.opened else self.state == "reasoning"

    def feed(self, text: str) -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        self._buf += text
        while self._buf:
            before = (self.state, self._buf)
            self._step(out, final=False)
            if (self.state, self._buf) == before:
                break
        return out

    def finish(self) -> list[tuple[str, str]]:
        """The end of the text: release whatever was held back."""
        out: list[tuple[str, str]] = []
        while self._buf:
            before = (self.state, self._buf)
            self._step(out, final=True)
            if (self.state, self._buf) == before:
                break
        return out

    def close(self) -> list[tuple[str, str]]:
        """The reasoning ended here (generation stopped on `</think>`, which the text never showed)."""
        out = self.finish()
        if self.state in ("start", "reasoning"):
            self.state, self._blank = "after", ""
        return out

    def _step(self, out, final: bool) -> None:
        buf = self._buf
        if self.state == "start":
            stripped = buf.lstrip()
            if stripped.startswith(OPEN):
                self.state = "reasoning"
                self._buf = stripped[len(OPEN):]
            elif not stripped or (OPEN.startswith(stripped) and not final):
                if final:
                    self._buf = ""
            else:
                self.state, self._buf = "answer", stripped
        elif self.state == "reasoning":
            i = buf.find(CLOSE)
            if i >= 0:
                self._reason(out, buf[:i], final=True)
                self.state, self._buf, self._blank = "after", buf[i + len(CLOSE):], ""
                return
            keep = 0 if final else _partial(buf, CLOSE)
            self._reason(out, buf[:len(buf) - keep], final=final)
            self._buf = buf[len(buf) - keep:]
        elif self.state == "after":
            stripped = buf.lstrip()
            self._buf = stripped
            if stripped:
                self.state = "answer"
        else:
            self.answer += buf
            out.append(("text", buf))
            self._buf = ""

    def _reason(self, out, text: str, final: bool) -> None:
        """Reasoning text, without its leading blank lines and (once it ends) its trailing ones."""
        if not self.reasoning and not self._blank:
            text = text.lstrip("\n")
        text = self._blank + text
        body = text.rstrip()
        self._blank = "" if final else text[len(body):]  # trailing blanks wait: they may end the reasoning
        if body:
            self.reasoning += body
            out.append(("reasoning", body))


def split(text: str, *, opened: bool = False) -> tuple[str, str]:
    """(reasoning, answer) of a finished reply."""
    s = ReasoningSplitter(opened=opened)
    s.feed(text)
    s.finish()
    return s.reasoning, s.answer
