"""The command line: one module per command (localspec/cli.py lists them). Shared flags, config fallbacks and model
loading live in helpers.py, so commands never import one another; the one arrow between them is run.py handing
`run --tools` to agent_run.py and `run --backend openai` to remote.py, which share its parser."""
