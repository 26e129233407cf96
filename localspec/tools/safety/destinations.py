"""Where a program writes, read from its options in every spelling: the table of programs whose options name a
destination (or, for make, where recipes run, and for some, a program to run), and the rating of those places."""
from __future__ import annotations

from dataclasses import dataclass

from localspec.tools.safety.argv_options import Syntax, embedded_paths, read
from localspec.tools.safety.places import outside, outside_path, runs_later
from localspec.tools.safety.rating import HIGH, Ratings

# Programs that write the files named in their arguments (the `cd` rule and "outside the workspace" use it).
WRITERS = {"rm", "rmdir", "mv", "cp", "tee", "truncate", "ln", "chmod", "chown", "chgrp", "touch",
           "mkdir", "install", "rsync", "dd", "shred", "unlink", "sponge", "mkfifo", "setfacl", "chattr"}


def _f(*names: str) -> frozenset[str]:
    return frozenset(names)


@dataclass(frozen=True)
class Writes:
    """A program whose options name where it writes (or, for make, whose recipes it runs): read in every
    spelling (options.read), so `-t DIR`, `-tDIR`, `--target-directory=DIR` and `--target DIR` are one rule."""
    syntax: Syntax
    into: frozenset[str]  # the options whose value is a destination
    runs: frozenset[str] = frozenset()  # options whose value is a program or code to run
    verb: str = "writes to"


_COPY = Writes(Syntax("tS", _f("--target-directory", "--suffix"),
                       _f("--no-target-directory", "--recursive", "--force", "--archive", "--symbolic",
                          "--verbose", "--interactive", "--update", "--backup", "--link", "--no-clobber")),
                _f("-t", "--target-directory"))
_CC = Writes(Syntax("oIDLlUxB", _f("--output")), _f("-o", "--output"))
WRITES: dict[str, Writes] = {
    "cp": _COPY, "mv": _COPY, "ln": _COPY,
    "install": Writes(Syntax("gmoSt", _f("--target-directory", "--suffix", "--group", "--mode", "--owner",
                                         "--strip-program")),
                       _f("-t", "--target-directory"), _f("--strip-program")),
    "tar": Writes(Syntax("bCfFgHIKLNTVX", _f("--directory", "--file", "--use-compress-program", "--to-command",
                                              "--info-script", "--new-volume-script", "--checkpoint-action",
                                              "--rsh-command", "--files-from", "--exclude-from", "--index-file",
                                              "--listed-incremental", "--transform", "--xform"),
                          _f("--extract", "--create", "--verbose", "--gzip", "--to-stdout", "--exclude")),
                   _f("-C", "--directory"),
                   _f("-I", "-F", "--use-compress-program", "--to-command", "--info-script", "--new-volume-script",
                      "--checkpoint-action", "--rsh-command")),
    "unzip": Writes(Syntax("dxP"), _f("-d")),
    "sort": Writes(Syntax("kotST", _f("--output", "--key", "--field-separator", "--buffer-size",
                                       "--temporary-directory", "--compress-program", "--files0-from",
                                       "--random-source", "--batch-size", "--parallel", "--sort")),
                    _f("-o", "--output"), _f("--compress-program")),
    "patch": Writes(Syntax("BDdFioprVYzg", _f("--prefix", "--ifdef", "--directory", "--fuzz", "--input",
                                               "--output", "--strip", "--reject-file", "--version-control",
                                               "--basename-prefix", "--suffix", "--get", "--quoting-style")),
                     _f("-o", "--output", "-d", "--directory", "-r", "--reject-file", "-B", "--prefix", "-Y",
                        "--basename-prefix")),
    "make": Writes(Syntax("CfIoW", _f("--directory", "--file", "--makefile", "--include-dir", "--old-file",
                                       "--assume-old", "--what-if", "--new-file", "--assume-new", "--eval")),
                    _f("-C", "--directory", "-f", "--file", "--makefile"), _f("--eval"),
                    verb="runs the build recipes of"),
    "curl": Writes(Syntax("AbcCdDeEFHKmoPQrTuUwxXyYzt", _f("--output", "--output-dir", "--cookie-jar",
                                                           "--dump-header", "--trace", "--trace-ascii", "--libcurl",
                                                           "--stderr", "--config", "--data", "--header")),
                    _f("-o", "--output", "--output-dir", "-c", "--cookie-jar", "-D", "--dump-header", "--trace",
                       "--trace-ascii", "--libcurl", "--stderr")),
    "wget": Writes(Syntax("OoaPeiBtTwQUlARDIX", _f("--output-document", "--directory-prefix", "--output-file",
                                                   "--append-output", "--execute", "--input-file")),
                    _f("-O", "--output-document", "-P", "--directory-prefix", "-o", "--output-file", "-a",
                       "--append-output"), _f("-e", "--execute")),
    "cc": _CC, "gcc": _CC, "g++": _CC, "c++": _CC, "clang": _CC, "clang++": _CC,
}
def outside_words(prog: str, args: list[str], root: str) -> list[str]:
    """The arguments that name a path outside the workspace. A program whose options are known is read exactly
    (`gcc -Isrc/include` is -I with src/include); any other over-reports (options.embedded_paths)."""
    spec = WRITES.get(prog)
    if spec is None:
        return [a for a in args if outside(a, root)]
    reading = read(args, spec.syntax)
    words = reading.positionals + [v for _, v in reading.options if v is not None]
    return [w for w in words if any(outside_path(p, root) for p in embedded_paths(w, short_tails=False))] + \
        [a for a in args if a.startswith("--") and "=" in a and outside_path(a.split("=", 1)[1], root)]


def rate_destinations(prog: str, args: list[str], flags: list[str], root: str, r: Ratings) -> None:
    """Where a command writes, read in every spelling: outside the workspace, or a place that runs code later."""
    spec = WRITES.get(prog)
    places: list[str] = []
    if spec is not None:
        reading = read(args, spec.syntax)
        places += reading.values(*spec.into)
        for target in reading.values(*spec.into):
            if outside(target, root):
                r.add(HIGH, f"{spec.verb} a folder or file outside the workspace ({target})")
        runs = reading.values(*spec.runs) + [n for n, v in reading.options if n in spec.runs and v is None]
        if runs:
            r.add(HIGH, f"runs a program or code given in its options ({prog} {runs[0][:60]})")
    if prog in WRITERS or prog == "patch" or (prog == "sed" and any(a.startswith(("-i", "--in-place"))
                                                                   or (a[:1] == "-" and "i" in a[1:2]) for a in flags)):
        places += [p for a in args for p in embedded_paths(a)]
    for place in places:
        why = runs_later(place, root)
        if why:
            r.add(HIGH, f"writes {place}: {why}")
            break


