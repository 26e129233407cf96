"""The drafter for a loaded head, by its kind."""

from __future__ import annotations

from typing import TYPE_CHECKING

from localspec.speculative.heads.base import HeadDrafter
from localspec.speculative.heads.dflash import DFlashDrafter
from localspec.speculative.heads.eagle3 import Eagle3Drafter
from localspec.speculative.heads.mtp import MTPDrafter

if TYPE_CHECKING:
    from localspec.runtime.heads import LoadedHead

DRIVERS: dict[str, type[HeadDrafter]] = {"mtp": MTPDrafter, "eagle3": Eagle3Drafter, "dflash": DFlashDrafter,
                                          "dspark": DFlashDrafter}


def head_drafter(head: LoadedHead, *, max_len: int, p_min: float) -> HeadDrafter:
    return DRIVERS[head.kind](head, max_len=max_len, p_min=p_min)
