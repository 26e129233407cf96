"""The Textual terminal app: chat with live speculative statistics, tool approvals, model management.

Only this package imports Textual. Modules without "Textual" in their docstring (options, session, turn, livestats,
origins) are plain Python so their logic is testable without a terminal.
"""
