"""Schema drafter: tokens the grammar forces (braces, keys, separators, the rest of a unique tool name) cost no
model work to propose and need no logits to verify."""

from __future__ import annotations

from localspec.speculative.draft import Draft, DraftRequest


class SchemaDrafter:
    name = "schema"

    def propose(self, req: DraftRequest) -> Draft:
        draft = Draft()
        if req.constraint is not None:
            for tok in req.constraint.forced()[: req.max_len]:
                draft.add(tok, self.name, forced=True)
        return draft

    def observe(self, draft: Draft, n_accepted: int) -> None:
        pass

    def reset(self) -> None:
        pass
