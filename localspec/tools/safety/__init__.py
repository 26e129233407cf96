"""What may run and who decides: danger ratings (`danger.py`, with `gitconfig.py` and `argv_options.py`), the
approval mode and remembered decisions (`policy.py`, `allowance.py`), the approval handshake (`approvals.py`), what
an approver is shown (`display.py`) and the approver on a plain terminal (`terminal_approval.py`)."""
