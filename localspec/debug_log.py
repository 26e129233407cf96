"""The debug log: LOCALSPEC_LOG=debug writes <log folder>/localspec.log (`localspec config show` prints where).

What it holds is what to ask for when a user reports "speculation got slower": one line per drafting gate window
(the sources asked, their drafted rows and accepted tokens, what their lookups cost and saved, which were switched
off; logger localspec.drafting), the MCP servers' lifecycle (localspec.mcp) and the server's requests
(localspec.serve). The modules only log through the standard `logging` loggers; this one, set up once by the
command line, decides where the lines go. The file is private (0600, in a 0700 folder, never followed through a
link): it holds paths, tool names and request sizes.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Mapping

from localspec.constants import ENV_LOG
from localspec.models.paths import get_paths
from localspec.private_files import open_append

FILE_NAME = "localspec.log"
LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING}
FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

_handler: logging.Handler | None = None


def log_file() -> Path:
    return get_paths().log_dir / FILE_NAME


def level(env: Mapping[str, str] | None = None) -> int | None:
    """The level LOCALSPEC_LOG asks for (debug, info, warning), or None: no log file."""
    value = (os.environ if env is None else env).get(ENV_LOG, "").strip().lower()
    return LEVELS.get(value)


def configure(env: Mapping[str, str] | None = None) -> Path | None:
    """Start writing the log file when LOCALSPEC_LOG asks for it (once per process); the path, or None. A folder
    that cannot be written is not an error of the command: the log is then off."""
    global _handler
    wanted = level(env)
    if wanted is None:
        return None
    path = log_file()
    if _handler is None:
        try:
            _handler = logging.StreamHandler(_open_private(path))
        except OSError:
            return None
        _handler.setFormatter(logging.Formatter(FORMAT))
        root = logging.getLogger("localspec")
        root.addHandler(_handler)
        # Warnings and errors still reach the terminal as they did without a handler (logging's last resort).
        terminal = logging.StreamHandler()
        terminal.setLevel(logging.WARNING)
        root.addHandler(terminal)
    logging.getLogger("localspec").setLevel(wanted)
    return path


def _open_private(path: Path):
    return open_append(path, within=path.parent)  # 0600 in a 0700 folder, never through a link (private_files.py)
