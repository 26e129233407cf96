"""Print one line per config from `localspec bench --json` result files (`--markdown`: rows for the README table)."""

import json
import sys
from pathlib import Path

args = sys.argv[1:]
markdown = "--markdown" in args
# oracle_ceiling.py's results (oracle-NAME.json, beside the bench result NAME.json) have their own table.
paths = [a for a in args if a != "--markdown" and not Path(a).name.startswith("oracle-")]
if markdown:
    print("| result | cases | config | tok/s | speedup | tokens/pass | acceptance | forced share | identical | "
          "valid JSON | AST |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
for path in paths:
    d = json.load(open(path))
    if not markdown:
        print(f"{path}: {d['cases']} cases")
    for i, (k, v) in enumerate(d["configs"].items()):
        ident = "-" if v["identical_to_baseline"] is None else f"{v['identical_to_baseline']:.2f}"
        if markdown:
            first = i == 0
            accept = "–" if k == "baseline" else f"{v['acceptance_rate']:.2f}"
            forced = "–" if k == "baseline" else f"{v['forced_share']:.2f}"
            speed = f"**{v['speedup']:.2f}**" if k != "baseline" else f"{v['speedup']:.2f}"
            print(f"| {Path(path).stem if first else ''} | {d['cases'] if first else ''} | {k} | "
                  f"{v['tokens_per_second']:.2f} | {speed} | {v['mean_accepted_length']:.2f} | {accept} | {forced} | "
                  f"{ident} | {v['valid_json']:.2f} | {v['ast_accuracy']:.2f} |")
            continue
        print(f"  {k:9} {v['tokens_per_second']:8.2f} tok/s  speedup {v['speedup']:.2f}x  "
              f"tok/pass {v['mean_accepted_length']:.2f}  accept {v['acceptance_rate']:.2f}  "
              f"forced {v['forced_share']:.2f}  identical {ident}  valid {v['valid_json']:.2f}  "
              f"AST {v['ast_accuracy']:.2f}  prefill {v['prefill_s']:.2f}s  latency {v['latency_s']:.2f}s")
