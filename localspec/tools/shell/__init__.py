"""The shell tool: run_shell (`execute.py`), how a command line reads as words (`parse.py`), the wrapper that keeps
track of what a command started (`reaper.py`, `procfs.py`) and the environment commands get (`environ.py`)."""
