"""The file tools (`operations.py`: read, list, search; `writes.py`: write and edit), confinement to the workspace
(`confine.py`), atomic replacement (`atomic.py`), untrusted patterns (`regex.py`, `globs.py`), binary sniffing and
diffs (`sniff.py`, `textdiff.py`)."""
