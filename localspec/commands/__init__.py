"""The command line: one module per command (localspec/cli.py lists them). The model, drafting and sampling flags
every front end shares, and the one place they become RunFlags (launch/), live in shared_flags.py, so commands never import one another; the one arrow between them is run.py handing
`run --tools` to agent_run.py and `run --backend openai` to remote.py, which share its parser."""
