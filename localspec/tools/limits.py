"""Size and count bounds for tool output and work: keep the model's context (and the UI) from flooding,
and keep memory and time bounded whatever file or pattern a tool is given."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Limits:
    read_bytes: int = 256 * 1024  # read_file returns at most this much text (and holds about this much)
    count_lines_up_to: int = 16 * 1024 * 1024  # beyond this size read_file does not count total lines
    list_entries: int = 500
    walk_entries: int = 50_000  # stop walking huge trees (list_dir with "**", search_text)
    walk_depth: int = 64  # directories deeper than this are not descended into
    search_results: int = 100  # default max_results
    search_results_max: int = 1000
    search_file_bytes: int = 2 * 1024 * 1024  # search_text skips bigger files
    search_line_chars: int = 300
    shell_output_bytes: int = 64 * 1024
    shell_timeout_s: float = 60.0
    shell_timeout_max_s: float = 600.0
    shell_command_bytes: int = 128 * 1024 - 1  # Linux's MAX_ARG_STRLEN: /bin/sh -c cannot take a longer one
    shell_max_processes: int = 1000  # more at once and the command is stopped (a fork bomb); Linux only
    diff_chars: int = 16 * 1024  # diff shown in write results
    diff_input_bytes: int = 1024 * 1024  # write_file: old or new content bigger than this gets a summary, no diff
    diff_lines: int = 2000  # a changed region longer than this is shown as one block, not aligned line by line
    edit_file_bytes: int = 8 * 1024 * 1024  # edit_file refuses bigger files (it holds the whole text)
