"""A DataTable of rows to pick from (models, saved conversations): Home and End jump to the first and last row.

Why: DataTable's own Home and End scroll sideways, which in a list of rows hides the columns on the right (F2's End
hid the pair column) instead of doing what every list does.
"""

from __future__ import annotations

from textual.binding import Binding
from textual.widgets import DataTable


class RowTable(DataTable):
    BINDINGS = [Binding("home", "first_row", "First", show=False), Binding("end", "last_row", "Last", show=False)]

    def action_first_row(self) -> None:
        if self.row_count:
            self.move_cursor(row=0)

    def action_last_row(self) -> None:
        if self.row_count:
            self.move_cursor(row=self.row_count - 1)
