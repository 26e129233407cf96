"""The environment run_shell passes to commands: the user's, minus anything that looks like a secret.

Why: the model reads command output, so `env` or `echo $HF_TOKEN` would hand it every token and API key the user
exported. Variables whose NAME looks like a credential (token, key, secret, password, credential, auth, ...) or
whose VALUE holds a password inside a URL (scheme://user:password@host) are removed, unless the user names them
in config (`tools.env_allow`, exact names or shell-style patterns like "AWS_*").
"""
from __future__ import annotations

import fnmatch
import os
import re
from typing import Iterable, Mapping

# Substrings of a variable's name (case-insensitive) that mark it as a secret. Over-matching is the safe side:
# e.g. SSH_AUTH_SOCK (lets a command use the user's SSH keys) and XAUTHORITY (the X11 cookie) go too.
SECRET_NAME = re.compile(
    r"TOKEN|SECRET|PASSW|PASSPHRASE|PWD_|_PWD$|CREDENTIAL|CREDS|AUTH(?!OR)|API_?KEY|ACCESS_?KEY|PRIVATE|_KEY$|^KEY$|"
    r"_KEY_|KEYRING|COOKIE|SESSION_?ID|JWT|BEARER|SIGNING|WEBHOOK|DSN$|CONNECTION_STRING|OAUTH|"
    r"(?:^|_)PASS(?:$|_)|(?:^|_)PAT$",
    re.IGNORECASE)
_URL_PASSWORD = re.compile(r"[a-z][a-z0-9+.-]*://[^/\s:@]+:[^/\s@]+@", re.IGNORECASE)
# Values that are a well-known kind of token whatever the variable is called (OPENAI=sk-..., MYVAR=ghp_...).
_TOKEN_VALUE = re.compile(r"\b(?:sk-[A-Za-z0-9_-]{20,}|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}|"
                          r"hf_[A-Za-z0-9]{30,}|xox[abprs]-[A-Za-z0-9-]{10,}|glpat-[A-Za-z0-9_-]{20,}|"
                          r"(?:AKIA|ASIA)[0-9A-Z]{16}|npm_[A-Za-z0-9]{36}|AIza[0-9A-Za-z_-]{35})")
# Kept even though they match a pattern above: they name no secret.
_NOT_SECRET = {"PWD", "OLDPWD", "GPG_TTY", "KEYTIMEOUT"}
# Make commands that page, colour or prompt behave in a pipe.
QUIET = {"PAGER": "cat", "GIT_PAGER": "cat", "TERM": "dumb", "NO_COLOR": "1", "GIT_TERMINAL_PROMPT": "0"}


def is_secret(name: str, value: str = "") -> bool:
    if name in _NOT_SECRET:
        return False
    return bool(SECRET_NAME.search(name)) or bool(_URL_PASSWORD.search(value)) or bool(_TOKEN_VALUE.search(value))


def allowed(name: str, allow: Iterable[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in allow)


def shell_environment(base: Mapping[str, str] | None = None,
                      allow: Iterable[str] = ()) -> tuple[dict[str, str], list[str]]:
    """(environment for the command, names removed). `allow` lists names/patterns the user lets through."""
    base = os.environ if base is None else base
    allow = tuple(allow)
    env: dict[str, str] = {}
    removed: list[str] = []
    for name, value in base.items():
        if is_secret(name, value) and not allowed(name, allow):
            removed.append(name)
        else:
            env[name] = value
    env.update(QUIET)
    if "PATH" in env:
        env["PATH"] = safe_path(env["PATH"])
    return env, sorted(removed)


def safe_path(value: str) -> str:
    """PATH without empty or relative entries ("", ".", "bin"): those are looked up from the command's working
    directory, the workspace, so a file the model wrote there named `git` or `ls` would run in place of the real
    program, even under a remembered "allow always"."""
    return os.pathsep.join(p for p in value.split(os.pathsep) if os.path.isabs(p))
