"""Size and count bounds for tool output: keep the model's context (and the UI) from flooding."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Limits:
    read_bytes: int = 256 * 1024  # read_file returns at most this much text
    count_lines_up_to: int = 16 * 1024 * 1024  # beyond this size read_file does not count total lines
    list_entries: int = 500
    walk_entries: int = 50_000  # stop walking huge trees (list_dir with "**", search_text)
    search_results: int = 100  # default max_results
    search_results_max: int = 1000
    search_file_bytes: int = 2 * 1024 * 1024  # search_text skips bigger files
    search_line_chars: int = 300
    shell_output_bytes: int = 64 * 1024
    shell_timeout_s: float = 60.0
    shell_timeout_max_s: float = 600.0
    diff_chars: int = 16 * 1024  # diff shown in write results
