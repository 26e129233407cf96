"""What one turn produced."""

from __future__ import annotations

from dataclasses import dataclass, field

from localspec.speculative import Stats


@dataclass
class TurnResult:
    content: str = ""  # the visible answer exactly as it streamed (without the call text)
    reasoning: str = ""  # what a reasoning model thought before it answered (tags left out)
    written_reasoning: str = ""  # ... exactly as written, tags included (events.ReasoningWritten)
    calls: list[tuple[str, dict]] = field(default_factory=list)  # (name, arguments), in order
    phases: list[tuple[str, Stats]] = field(default_factory=list)  # (phase, its generation's statistics)
    finish: str = ""  # why the last generation ended, in the engine's terms (stop, length, grammar, context, ...)
    wanted_call: bool = False  # the model began a call where none was allowed (choice "none")
    notices: list[str] = field(default_factory=list)  # what the user should know (a call cut off, a repeat dropped)
    call_error: str | None = None  # a call that could not be read (cut off by the token limit): not returned
    error: str | None = None  # why the turn could not go on (finish "context": the context window is full)
    prompt_tokens: int = 0
    first_token_s: float | None = None  # from the start of the turn (rendering included) to its first text; None:
    # none came, or the runner did not measure it
    reused_prefix_tokens: int = 0  # prompt tokens the turn did not compute (kept in the cache or restored)

    @property
    def text(self) -> str:
        """The answer as a message keeps it (templates strip it when they render the turn back)."""
        return self.content.strip()

    @property
    def stats(self) -> Stats:
        """Every phase's statistics merged (the turn's target passes, drafts, time); its prompt is the turn's, not
        the sum of the phases' (each phase continues the one before)."""
        total = Stats()
        for _, s in self.phases:
            total.merge(s)
        total.prompt_tokens = self.prompt_tokens
        total.finish_reason = self.finish
        return total

    @property
    def generated_tokens(self) -> int:
        return sum(s.generated_tokens for _, s in self.phases)
