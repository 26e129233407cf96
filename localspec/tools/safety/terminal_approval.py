"""The terminal approver's question: show the request (tools/safety/display.py) and read y / a / n / d.

No terminal on stdin (or end of input) means the call does not run, and nobody said no: NotAsked, so the model is
told the user was not asked (not "denied by the user"). "a" is accepted only where "always" is offered; elsewhere the
user is told it is not, and asked again.
"""
from __future__ import annotations

from typing import TextIO

from localspec.tools.safety.approvals import ApprovalRequest, Decision, NotAsked
from localspec.tools.safety.display import approval_prompt, approval_text

_KEYS = {"y": Decision.ALLOW_ONCE, "a": Decision.ALLOW_ALWAYS, "n": Decision.DENY_ONCE, "d": Decision.DENY_ALWAYS}


def ask_on_terminal(request: ApprovalRequest, src: TextIO, dst: TextIO) -> Decision:
    print(approval_text(request), file=dst)
    if not src.isatty():
        print("  no terminal to ask on: not run (use --approve auto to allow such calls)", file=dst)
        raise NotAsked("there is no terminal to ask on; --approve auto would allow such calls")
    while True:
        dst.write(approval_prompt(request))
        dst.flush()
        line = src.readline()
        if not line:
            print("\n  the input ended before an answer: not run", file=dst)
            raise NotAsked("the terminal's input ended before an answer")
        choice = _KEYS.get(line.strip().lower()[:1])
        if choice is Decision.ALLOW_ALWAYS and not request.always:
            print("  'always' is not offered for this call (see above): answer y, n or d", file=dst)
            continue
        if choice is not None:
            return choice
