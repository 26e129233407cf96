#!/bin/bash
# Measure localspec on a CUDA GPU (issue 25), in one go that fits 10 minutes. On the GPU machine, from the project
# root, with .gpu/ made by benchmarks/gpu/prepare.sh:
#
#   OUT=/some/folder bash benchmarks/gpu/run.sh
#
# Steps (each skipped, saying so, when the time left, LIMIT seconds in all, would not cover it):
#   build    llama.cpp for CUDA from the sdist's source (llama-bench and libllama; FA kernels off: 3-4 min on 16 cores)
#            and point llama-cpp-python's bindings at it; NO LD_PRELOAD (localspec orders the library loads itself)
#   doctor   `localspec doctor --json`: the self-test on the CPU and each GPU, the layers each holds
#   models   random-weight GGUFs of real shapes with Qwen2's 152k tokenizer (mkrand.py): an 8B llama-3 shape (Q4_0)
#            and a 0.5B draft shape (Q8_0)
#   bench    llama-bench's cost curve (-p 1..64 -n 64, and -embd 1 for logits rows) -> profile.json (profile.py)
#   verify   localspec's own passes of k rows against llama-bench's pp k; the draft model's price at load against
#            llama-bench's step (verify_cost.py)
#   heads    random-weight Qwen3.5-9B with its MTP block, Qwen3-8B with an EAGLE-3 head and a DFlash drafter, in their
#            real shapes (mkheads.py); each head's step priced against its target's (head_cost.py: llama-bench cannot
#            run a head), added to profile.json's "heads" (heads.json: the figures)
#   runs     `localspec run`: target only (against llama-bench tg) and default drafting with the 0.5B draft
#   suites   `localspec bench` on SUITES with --cost-profile profile.json (the projection checked against this GPU's
#            own speedups) and the oracle ceiling (benchmarks/oracle_ceiling.py)
# Everything lands in $OUT: log.txt, doctor.json, llama_bench.jsonl, profile.json, verify_cost.json, heads.json,
# profile_heads.json, run_*.json, bench_*.json, oracle_*.json and summary.json (the figures issue 25 asks for, side
# by side; issue 35's head prices).
#
# Settings (environment): LIMIT=570 (seconds), SUITES (default: benchmarks/multiturn.jsonl), SUITE_LIMIT=6 (cases),
# ARCH (CUDA architecture; default: the GPU's compute capability).
# To try the kit's Python parts on a machine without CUDA: CPU=1 LLAMA_BENCH=path/to/llama-bench SMALL=1 (small
# shapes, the installed llama-cpp-python, no build: every step ran in 13 minutes on the busy 2-core development
# machine, which checks the plumbing, not the figures).
set -u
export PYTHONUNBUFFERED=1
T0=$(date +%s)
LIMIT=${LIMIT:-570}
: "${OUT:?set OUT to the folder for the figures}"
mkdir -p "$OUT"
P=$(cd "$(dirname "$0")/../.." && pwd)
G="$P/.gpu"
K="$P/benchmarks/gpu"
exec > >(tee "$OUT/log.txt") 2>&1
el() { echo "[$(( $(date +%s) - T0 ))s] $*"; }
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
# fits SECONDS NAME: whether a step needing SECONDS still fits; says so when it does not.
fits() { if [ "$(left)" -lt "$1" ]; then el "skipped $2: needs ${1}s, $(left)s left"; return 1; fi; }
cd "$P"
el "start (limit ${LIMIT}s)"
[ -f "$G/llama-src.tgz" ] || { echo "error: $G/llama-src.tgz missing: run benchmarks/gpu/prepare.sh first" >&2; exit 1; }

B=/tmp/localspec-gpu; mkdir -p $B
tar xzf "$G/llama-src.tgz" -C $B
VOCAB=$B/llama.cpp/models/ggml-vocab-qwen2.gguf
if [ "${CPU:-0}" = 1 ]; then
  BENCH=${LLAMA_BENCH:?CPU=1 needs LLAMA_BENCH=path/to/llama-bench}
  NGL=0
  export PYTHONPATH=$P${PYTHONPATH:+:$PYTHONPATH}
else
  NGL=99
  nvidia-smi --query-gpu=name,memory.total,driver_version,compute_cap --format=csv,noheader
  ARCH=${ARCH:-$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d '.')}
  NVCC=$(command -v nvcc || ls /usr/local/cuda*/bin/nvcc 2>/dev/null | head -1)
  CUDA_HOME=$(dirname "$(dirname "$NVCC")")
  cmake -S $B/llama.cpp -B $B/build -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_CUDA=ON -DGGML_CUDA_FA=OFF \
    -DCMAKE_CUDA_COMPILER="$NVCC" -DCMAKE_CUDA_ARCHITECTURES="$ARCH" -DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON \
    -DGGML_F16C=ON -DBUILD_SHARED_LIBS=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF \
    -DLLAMA_BUILD_APP=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DGGML_CUDA_NCCL=OFF -DGGML_CCACHE=OFF \
    > "$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
  timeout $(( $(left) - 150 )) cmake --build $B/build -j "$(nproc)" --target llama-bench llama >> "$OUT/build.log" 2>&1 \
    || { grep -m3 -A12 -i " error" "$OUT/build.log"; tail -15 "$OUT/build.log"; el "build failed or ran out of time"; exit 1; }
  el built; rm -f "$OUT/build.log"
  BENCH=$B/build/bin/llama-bench
  # llama-cpp-python's bindings over the libraries just built (its own wheel would bring a CPU build).
  rm -rf $B/lcp && mkdir -p $B/lcp && cp -r "$G/lcp/llama_cpp" $B/lcp/ && mkdir -p $B/lcp/llama_cpp/lib
  find $B/build -name "*.so*" -exec cp -P {} $B/lcp/llama_cpp/lib/ \;
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target $B/site "$G"/whl/*.whl \
    2>&1 | grep -v WARNING | tail -3
  export PYTHONPATH=$B/site:$B/lcp:$P LD_LIBRARY_PATH=$B/lcp/llama_cpp/lib:$CUDA_HOME/lib64:${LD_LIBRARY_PATH:-}
fi
export LOCALSPEC_HOME=$B/home
unset LD_PRELOAD   # issue 25: localspec must run without it

el doctor
timeout 60 python3 -m localspec doctor --json > "$OUT/doctor.json"; echo "doctor rc=$? (1: a self-test failed)"
python3 - "$OUT/doctor.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print("backend", d["llama_cpp"]["backend"], "offload", d["llama_cpp"]["gpu_offload"])
for t in d.get("self_test") or []:
    print(f"  self-test {t['device']}: " + ("ok, layers " + str(t["layers"]) if t["ok"] else "FAILED: " + t["failure"]))
PY

M=$B/models; mkdir -p $M
if [ "${SMALL:-0}" = 1 ]; then T_SHAPE="512 4 8 2 1536 q4_0"; D_SHAPE="256 2 4 2 768 q8_0"
else T_SHAPE="4096 32 32 8 14336 q4_0"; D_SHAPE="896 24 14 2 4864 q8_0"; fi
fits 60 models && { python3 "$K/mkrand.py" $M/t8.gguf $VOCAB $T_SHAPE $M/d05.gguf $D_SHAPE; el models; }

if fits 90 llama-bench; then
  : > "$OUT/llama_bench.jsonl"
  for m in t8 d05; do
    timeout 60 $BENCH -m $M/$m.gguf -ngl $NGL -p 1,2,4,8,16,32,64 -n 64 -r 4 -o jsonl >> "$OUT/llama_bench.jsonl"
    timeout 45 $BENCH -m $M/$m.gguf -ngl $NGL -p 2,4,8,16,32,64 -n 0 -r 4 -embd 1 -o jsonl >> "$OUT/llama_bench.jsonl"
  done
  python3 "$K/profile.py" "$OUT/llama_bench.jsonl" --target t8 --draft d05 > "$OUT/profile.json"
  el "llama-bench + profile rc=$?"
fi
PROFILE=$OUT/profile.json

fits 60 verify && { timeout 90 python3 "$K/verify_cost.py" --target $M/t8.gguf --draft $M/d05.gguf --profile "$PROFILE" \
  --json > "$OUT/verify_cost.json"; el "verify_cost rc=$?"; }

if fits 150 heads; then
  H=$M/heads; V=$B/llama.cpp/models
  if [ "${SMALL:-0}" = 1 ]; then HL="--layers-9b 4 --layers-8b 6"; else HL=""; fi
  timeout 240 python3 "$K/mkheads.py" $H --vocab-qwen35 $V/ggml-vocab-qwen35.gguf --vocab-qwen3 $V/ggml-vocab-qwen2.gguf $HL \
    && el "head models written"
  if [ -f "$PROFILE" ]; then cp "$PROFILE" "$OUT/profile_heads.json"; else echo '{}' > "$OUT/profile_heads.json"; fi
  echo "{" > "$OUT/heads.json"; sep=""
  for spec in "mtp:$H/qwen35-9b.gguf:" "eagle3:$H/qwen3-8b.gguf:$H/qwen3-8b-eagle3.gguf" "dflash:$H/qwen3-8b.gguf:$H/qwen3-8b-dflash.gguf"; do
    IFS=: read -r kind t h <<< "$spec"
    fits 40 "head $kind" || continue
    r=$(timeout 120 python3 "$K/head_cost.py" --target "$t" ${h:+--head "$h"} --n-gpu-layers $NGL --json \
        --profile "$OUT/profile_heads.json" --write-profile "$OUT/profile_heads.json") \
      && { printf '%s "%s": %s' "$sep" "$kind" "$r" >> "$OUT/heads.json"; sep=","; }
    el "head $kind rc=$?"
  done
  echo "}" >> "$OUT/heads.json"
  # The suites below price with this GPU's profile: with the heads in it, a pair with a head drafts as it would here.
  [ -f "$PROFILE" ] && PROFILE=$OUT/profile_heads.json
fi

PROMPT="Write a short story about a lighthouse keeper who finds a message in a bottle."
for v in "nodraft:--no-draft" "default:--draft $M/d05.gguf"; do
  name=${v%%:*}; flags=${v#*:}
  fits 45 "run $name" || continue
  timeout 90 python3 -m localspec run --target $M/t8.gguf $flags --max-tokens 256 --json "$PROMPT" \
    > "$OUT/run_$name.json" 2>> "$OUT/run_err.txt"
  el "run $name rc=$? (139: the segfault of issue 25)"
done

for suite in ${SUITES:-benchmarks/multiturn.jsonl}; do
  s=$(basename "$suite" .jsonl)
  fits 90 "bench $s" && { timeout 240 python3 -m localspec bench "$suite" --target $M/t8.gguf --draft $M/d05.gguf \
    --configs baseline,model,toolspec,all --limit "${SUITE_LIMIT:-6}" --max-tokens 128 --cost-profile "$PROFILE" \
    --json > "$OUT/bench_$s.json"; el "bench $s rc=$?"; }
  fits 60 "oracle $s" && { timeout 180 python3 benchmarks/oracle_ceiling.py "$suite" --target $M/t8.gguf \
    --limit "${SUITE_LIMIT:-6}" --json > "$OUT/oracle_$s.json"; el "oracle $s rc=$?"; }
done

python3 "$K/summary.py" "$OUT" | tee "$OUT/summary.json"
el done
