"""The table of per-program danger raters: what each known program can delete, overwrite, run or reach with its
arguments. danger.py rates what every command shares (redirections, wrappers, variables, paths outside the
workspace, writes into places that run code later) and then the program's own rater from this table.

Programs that run code or commands of their own are rated in tools/safety/code_rating.py, git in
tools/safety/git_rating.py; the rest are here. A program not in the table gets only the shared rules.
"""
from __future__ import annotations

from typing import Callable

from localspec.tools.safety.code_rating import code_raters, is_interpreter, rate_interpreter
from localspec.tools.safety.git_rating import rate_git
from localspec.tools.safety.rating import HIGH, MEDIUM, Call, long_given

Rater = Callable[[Call], None]

# Programs that hand a command to a service which runs it outside this call's process tree.
DETACH = {"systemd-run", "at", "batch", "launchctl", "daemonize", "start-stop-daemon", "disown", "atd",
          "dbus-send", "gdbus", "busctl", "loginctl"}
_NETWORK = {"curl", "wget", "nc", "ncat", "netcat", "ssh", "scp", "sftp", "rsync", "ftp", "telnet",
            "socat", "aria2c", "http", "https"}
_DISK = {"dd", "mkfs", "mke2fs", "fdisk", "sfdisk", "parted", "wipefs", "shred", "mkswap", "swapoff"}
_POWER = {"shutdown", "reboot", "halt", "poweroff"}
_INSTALLERS = {"pip", "pip3", "npm", "pnpm", "yarn", "apt", "apt-get", "brew", "gem", "cargo", "go",
               "conda", "uv", "bun", "dnf", "yum", "apk", "pacman"}
_SYSTEM = {"mount", "umount", "iptables", "nft", "crontab", "visudo", "passwd", "useradd", "userdel"}
_FIND_FILTERS = {"-name", "-iname", "-path", "-ipath", "-regex", "-iregex", "-wholename", "-iwholename", "-empty",
                 "-newer", "-mtime", "-mmin", "-size", "-perm", "-user", "-inum", "-samefile", "-lname", "-ilname"}
# ssh options whose value is a command ssh runs on this machine (-o ProxyCommand=..., -o LocalCommand=...).
_SSH_RUNS = ("proxycommand", "localcommand", "knownhostscommand", "permitlocalcommand", "pkcs11provider",
             "securitykeyprovider", "match")


def rate_rm(call: Call) -> None:
    if "r" in call.short.lower() or long_given(call.flags, "--recursive"):
        call.add(HIGH, "deletes recursively (rm -r)")
    else:
        call.add(MEDIUM, "deletes files (rm)")


def rate_disk(call: Call) -> None:
    call.add(HIGH, f"can overwrite or wipe disks ({call.prog})")


def rate_ownership(call: Call) -> None:
    if "R" in call.short or long_given(call.flags, "--recursive"):
        call.add(HIGH, f"changes permissions or ownership recursively ({call.prog} -R)")
    elif call.prog != "chmod":
        call.add(HIGH, f"changes file ownership ({call.prog})")
    elif any(a in ("777", "a+rwx", "o+w") for a in call.positional):
        call.add(MEDIUM, "makes files world-writable")


def rate_elevated(call: Call) -> None:
    call.add(HIGH, f"runs with elevated privileges ({call.prog})")


def rate_detach(call: Call) -> None:
    call.add(MEDIUM, f"asks a service to run something later or apart ({call.prog}); the tool cannot stop what "
                     "that starts")


def rate_multiplexer(call: Call) -> None:
    if (call.prog == "tmux" and "-d" in call.args) or (call.prog == "screen" and any("d" in f for f in call.flags)):
        rate_detach(call)


def rate_network(call: Call) -> None:
    call.add(MEDIUM, f"uses the network ({call.prog})")
    args = call.args
    if call.prog == "rsync" and any(a.startswith(("--del", "--remove-source")) for a in call.flags):
        call.add(HIGH, "deletes files (rsync --delete / --remove-source-files)")
    if call.prog == "rsync" and any(a == "-e" or a.startswith(("--rsh", "--rsync-path")) or
                                    (a.startswith("-") and not a.startswith("--") and "e" in a[1:]) for a in args):
        call.add(HIGH, "runs the given program as its remote shell (rsync -e / --rsync-path)")
    if call.prog in ("ssh", "scp", "sftp"):
        options = [args[i + 1] for i, a in enumerate(args[:-1]) if a == "-o"] + \
                  [a[2:] for a in args if a.startswith("-o") and len(a) > 2]
        if any(o.strip().lower().startswith(_SSH_RUNS) for o in options) or \
                any(a in ("-S", "-D") for a in args if call.prog == "scp") or "-F" in args:
            call.add(HIGH, f"runs a command on this machine given in its options ({call.prog} -o ProxyCommand, "
                           "-F, scp -S)")


def rate_installer(call: Call) -> None:
    if "install" in call.positional or "add" in call.positional[:1]:
        call.add(MEDIUM, f"installs packages ({call.prog})")


def rate_power(call: Call) -> None:
    call.add(HIGH, f"shuts down or reboots the machine ({call.prog})")


def rate_service_manager(call: Call) -> None:
    if set(call.positional) & {"poweroff", "reboot", "halt", "0", "6"}:
        rate_power(call)


def rate_kill(call: Call) -> None:
    if "-1" in call.positional or "-1" in call.args[-1:]:
        call.add(HIGH, "kills every process you own (kill -1)")
    else:
        call.add(MEDIUM, f"stops processes ({call.prog})")


def rate_system(call: Call) -> None:
    call.add(HIGH, f"changes system configuration ({call.prog})")


def rate_eval(call: Call) -> None:
    call.add(MEDIUM, "evaluates a dynamically built command (eval)")


def rate_find(call: Call) -> None:
    args = call.args
    if "-delete" in args or any(a in ("rm", "-execdir") for a in args):
        if any(a in _FIND_FILTERS for a in args):
            call.add(MEDIUM, "deletes files found by find")
        else:  # "find . -delete", "find . -type f -exec rm {} +": everything below the start folders
            call.add(HIGH, "deletes everything find walks through (find -delete / -exec rm without a name filter)")
    if any(a in ("-exec", "-execdir", "-ok", "-okdir") for a in args):
        call.add(MEDIUM, "runs a command on every file found (find -exec)")
    if any(a in ("-fprint", "-fprint0", "-fprintf", "-fls") for a in args):
        call.add(MEDIUM, "writes a file (find -fprint)")


def _table() -> dict[str, Rater]:
    table: dict[str, Rater] = {"rm": rate_rm, "chmod": rate_ownership, "chown": rate_ownership,
                               "chgrp": rate_ownership, "sudo": rate_elevated, "doas": rate_elevated,
                               "pkexec": rate_elevated, "tmux": rate_multiplexer, "screen": rate_multiplexer,
                               "systemctl": rate_service_manager, "init": rate_service_manager, "kill": rate_kill,
                               "pkill": rate_kill, "killall": rate_kill, "eval": rate_eval, "find": rate_find,
                               "git": rate_git}
    for names, rater in ((_DISK, rate_disk), (DETACH, rate_detach), (_NETWORK, rate_network),
                         (_INSTALLERS, rate_installer), (_POWER, rate_power), (_SYSTEM, rate_system)):
        for name in names:
            table.setdefault(name, rater)
    table.update(code_raters())
    return table


PROGRAMS: dict[str, Rater] = _table()


def rater_for(prog: str) -> list[Rater]:
    """The raters of a program: its own from the table, the interpreters' (a family: python3.12, perl5.36, ...)
    and mkfs's (mkfs.ext4, mkfs.vfat, ...)."""
    found = [PROGRAMS[prog]] if prog in PROGRAMS else []
    if is_interpreter(prog):
        found.append(rate_interpreter)
    if prog.startswith("mkfs") and prog not in PROGRAMS:
        found.append(rate_disk)
    if prog in _INSTALLERS and PROGRAMS.get(prog) is not rate_installer:
        found.append(rate_installer)  # bun is an interpreter and an installer
    return found
