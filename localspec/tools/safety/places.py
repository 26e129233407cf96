"""Where a path points, for the danger ratings: outside the workspace, or a place whose files run code later (shell
start-up files, .git, ~/.ssh, ...), or a folder on PATH."""
from __future__ import annotations

import os
from pathlib import Path

from localspec.tools.safety.argv_options import embedded_paths

SAFE_DEVICES = {"/dev/null", "/dev/stdin", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/zero", "/dev/random",
                "/dev/urandom"}


def _f(*names: str) -> frozenset[str]:
    return frozenset(names)


# Files and folders whose contents run later: shell start-up files, git's and ssh's configuration, editors'
# start-up files, user services. A write there is high whatever the folder it is in.
STARTUP_FILES = _f(".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile", ".zshrc", ".zshenv",
                   ".zprofile", ".zlogin", ".zlogout", ".cshrc", ".tcshrc", ".login", ".logout", ".kshrc",
                   ".mkshrc", ".inputrc", ".xprofile", ".xinitrc", ".xsession", ".xsessionrc", ".pam_environment",
                   ".gitconfig", ".gitattributes_global", ".vimrc", ".gvimrc", ".exrc", ".emacs", ".npmrc",
                   ".yarnrc", ".pythonstartup", ".pythonrc", ".netrc", ".curlrc", ".wgetrc", ".pypirc",
                   ".envrc", "authorized_keys", "crontab", "sudoers")
CODE_FOLDERS = _f(".git", ".ssh", ".gnupg", ".bashrc.d", ".profile.d", "profile.d", "cron.d", "init.d",
                  "sudoers.d", "autostart", "systemd", "environment.d", "git", "fish")
# Folders that hold code only under these parents (~/.config/git, ~/.config/systemd): "git" alone is too common.
CODE_PARENTS = {"git": ".config", "fish": ".config", "autostart": ".config", "systemd": ".config",
                "environment.d": ".config"}


def outside(word: str, root: str) -> bool:
    """Whether a word, or a path inside it (--out=/etc/x, of=/dev/sda, -t/root), escapes the workspace."""
    return any(outside_path(p, root) for p in embedded_paths(word))


def outside_path(token: str, root: str) -> bool:
    """Whether one path escapes the workspace."""
    if "://" in token:
        return False  # a URL, rated by the network rule
    if not token or token.startswith("-"):
        return False
    if token.startswith("~") or token.startswith(("$HOME", "${HOME}")):
        return True
    if token.startswith("/"):
        if token in SAFE_DEVICES or token.startswith("/dev/fd/"):
            return False
        real = os.path.realpath(token)
    elif ".." in Path(token).parts:
        real = os.path.realpath(os.path.join(root, token))
    else:
        return False
    return not (real == root or real.startswith(root.rstrip(os.sep) + os.sep))


def runs_later(place: str, root: str) -> str:
    """Why a write to this path would run code later (shell start-up files, .git, ~/.ssh, ...); '' when not."""
    path = home_expanded(place)
    if not path:
        return ""
    full = os.path.normpath(path if os.path.isabs(path) else os.path.join(root, path))
    real = full
    if len(full) < 4096:  # PATH_MAX: a longer path cannot be opened, and resolving it costs time per component
        try:
            real = os.path.realpath(full)  # a symlink in the workspace to .git/hooks is .git/hooks
        except (OSError, ValueError):
            pass
    for candidate in dict.fromkeys((full, real)):
        parts = candidate.split(os.sep)
        for i, part in enumerate(parts):
            if part in CODE_FOLDERS and (part not in CODE_PARENTS or parts[i - 1:i] == [CODE_PARENTS[part]]):
                if part == ".git":
                    return "git runs hooks and reads configuration from .git (core.fsmonitor, core.pager ...)"
                return f"files in {part}/ run or configure programs later"
        if parts[-1] in STARTUP_FILES:
            return f"{parts[-1]} runs or configures programs later (start-up or configuration file)"
    return ""


def home_expanded(word: str) -> str:
    for prefix in ("~/", "$HOME/", "${HOME}/"):
        if word.startswith(prefix):
            return os.path.join(os.path.expanduser("~"), word[len(prefix):])
    if word in ("~", "$HOME", "${HOME}"):
        return os.path.expanduser("~")
    return "" if "\x00" in word else word


def on_path(folder: str) -> bool:
    try:
        real = os.path.realpath(folder)
        return any(os.path.isabs(p) and os.path.realpath(p) == real
                   for p in os.environ.get("PATH", "").split(os.pathsep))
    except (OSError, ValueError):
        return True


def write_rating(place: str, root: str) -> tuple[str, str] | None:
    """(level, reason) for a program writing to `place`: high where it runs code later or is outside the workspace,
    medium elsewhere; None for the harmless devices (/dev/null, /dev/stdout)."""
    if place in SAFE_DEVICES or place.startswith("/dev/fd/"):
        return None
    why = runs_later(place, root)
    if why:
        return "high", f"writes {place}: {why}"
    if outside(place, root):
        return "high", f"writes a file outside the workspace ({place})"
    return "medium", f"writes a file ({place})"
