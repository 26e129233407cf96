"""Print one line per config from a `localspec bench --json` result file."""

import json
import sys

for path in sys.argv[1:]:
    d = json.load(open(path))
    print(f"{path}: {d['cases']} cases")
    for k, v in d["configs"].items():
        ident = "-" if v["identical_to_baseline"] is None else f"{v['identical_to_baseline']:.2f}"
        print(f"  {k:9} {v['tokens_per_second']:8.2f} tok/s  speedup {v['speedup']:.2f}x  "
              f"tok/pass {v['mean_accepted_length']:.2f}  accept {v['acceptance_rate']:.2f}  "
              f"forced {v['forced_share']:.2f}  identical {ident}  valid {v['valid_json']:.2f}  "
              f"AST {v['ast_accuracy']:.2f}  prefill {v['prefill_s']:.2f}s  latency {v['latency_s']:.2f}s")
