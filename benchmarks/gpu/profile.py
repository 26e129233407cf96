#!/usr/bin/env python3
"""Turn llama-bench's JSONL into a localspec cost profile (JSON on stdout).

    python benchmarks/gpu/profile.py LLAMA_BENCH.jsonl --target NAME [--draft NAME]

NAME matches llama-bench's `model_filename` (a substring will do when it names one file). Record the figures with
`llama-bench -m MODEL -p 1,2,4,8,16,32,64 -n 64 -r 4 -o jsonl` (add a second run with `-embd 1` to price logits
rows: it outputs every row), on the machine the profile is for. Then `localspec bench --cost-profile PROFILE.json`
prices passes with it and projects each config's speedup there (localspec/speculative/profile.py says how).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from localspec.errors import LocalspecError  # noqa: E402
from localspec.speculative.profile import profile_from_llama_bench, read_jsonl  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("jsonl", metavar="LLAMA_BENCH.jsonl")
    ap.add_argument("--target", required=True, metavar="NAME")
    ap.add_argument("--draft", metavar="NAME")
    a = ap.parse_args(argv)
    try:
        try:
            lines = Path(a.jsonl).read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise LocalspecError(f"cannot read {a.jsonl}: {exc.strerror}") from None
        profile = profile_from_llama_bench(read_jsonl(lines, a.jsonl), a.target, a.draft)
    except LocalspecError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(profile, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
