"""How an engine drafts: one frozen value handed to the builder, whatever the front end (vLLM's SpeculativeConfig
plays this part there). Resolved once from flags, config.toml and the pair's hints (localspec/launch/)."""

from __future__ import annotations

from dataclasses import dataclass

from localspec.errors import ConfigError
from localspec.speculative import names as registry

DRAFT_MAX = 8  # most tokens the draft model proposes per step, unless config or the pair's hints say otherwise
DRAFT_P_MIN = 0.75  # the draft model stops where its top probability falls below this
MAX_DRAFT = 64  # most tokens one draft may hold, from any source (a long copy of a file's lines)


@dataclass(frozen=True)
class DraftingConfig:
    drafters: tuple[str, ...] = ("model",)  # registry names; () is target-only decoding
    draft_max: int = DRAFT_MAX
    draft_p_min: float = DRAFT_P_MIN
    max_draft: int = MAX_DRAFT
    # With the "head" drafter: draft with the target's own MTP layers where it has them (off: not even loaded; a
    # head file named as the draft still drafts).
    mtp: bool = True

    def __post_init__(self):
        registry.check_names(self.drafters)
        if self.draft_max < 0:
            raise ConfigError(f"draft_max must be >= 0, not {self.draft_max}")
        if not 0.0 <= self.draft_p_min <= 1.0:
            raise ConfigError(f"draft_p_min must be between 0 and 1, not {self.draft_p_min}")

    @property
    def target_only(self) -> bool:
        return not self.drafters

    @property
    def uses_model(self) -> bool:
        return "model" in self.drafters

    @property
    def uses_heads(self) -> bool:
        return "head" in self.drafters


TARGET_ONLY = DraftingConfig(drafters=())
