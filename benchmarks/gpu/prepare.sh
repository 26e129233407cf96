#!/usr/bin/env bash
# Run on the development machine (with network), from the project root: fills .gpu/ (git-ignored) with what a GPU
# machine without network cannot download:
#   .gpu/llama-src.tgz   llama.cpp's source, as vendored in the llama-cpp-python sdist (CUDA backend kept, other
#                        GPU backends dropped to stay small), plus its Qwen2 and Qwen3.5 vocab-only GGUFs for
#                        mkrand.py and mkheads.py
#   .gpu/lcp/llama_cpp/  llama-cpp-python's Python package (its ctypes bindings; run.sh adds the CUDA libraries)
#   .gpu/whl/            the project's runtime dependencies as wheels for the GPU machine's Python (PYVER, 3.12)
# About 30 MB: bring it along (the device tool: carry [".gpu"]) and run `bash benchmarks/gpu/run.sh` there.
set -euo pipefail
V=${LLAMA_CPP_PYTHON_VERSION:-0.3.36}   # the llama-cpp-python the bindings come from (localspec needs load_mode)
PYVER=${PYVER:-3.12}
T=${TMPDIR:-/tmp}/localspec-gpu-prep
[ -f pyproject.toml ] && [ -d localspec ] || { echo "error: run from the project root" >&2; exit 1; }
rm -rf .gpu "$T" && mkdir -p .gpu/whl .gpu/lcp "$T/src"
python3 -m pip download -q --no-deps --no-binary :all: "llama-cpp-python==$V" -d "$T"
tar xzf "$T/llama_cpp_python-$V.tar.gz" -C "$T/src"
S="$T/src/llama_cpp_python-$V"
cp -r "$S/llama_cpp" .gpu/lcp/ && rm -rf .gpu/lcp/llama_cpp/server
x=(); for b in sycl vulkan opencl hexagon metal et cann webgpu zdnn openvino; do x+=(--exclude="llama.cpp/ggml/src/ggml-$b"); done
(cd "$S/vendor" && tar czf - "${x[@]}" --exclude='llama.cpp/tools/ui' --exclude='llama.cpp/tools/mtmd/legacy-models' \
  llama.cpp/CMakeLists.txt llama.cpp/cmake llama.cpp/ggml llama.cpp/src llama.cpp/include llama.cpp/common \
  llama.cpp/vendor llama.cpp/tools llama.cpp/examples llama.cpp/pocs llama.cpp/app llama.cpp/licenses llama.cpp/LICENSE \
  llama.cpp/models/ggml-vocab-qwen2.gguf llama.cpp/models/ggml-vocab-qwen35.gguf llama.cpp/models/templates) \
  > .gpu/llama-src.tgz
# Runtime dependencies from pyproject.toml, but not llama-cpp-python (built there), numpy (the GPU machine has it:
# a second copy would be a second OpenBLAS) or tomli (Python < 3.11 only).
deps=$(python3 - <<'PY'
import tomllib
d = tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]
print(" ".join(x.split(";")[0].strip() for x in d if not x.startswith(("llama-cpp-python", "numpy", "tomli"))))
PY
)
# Every manylinux tag a glibc up to GLIBC (2.35: Ubuntu 22.04) runs: llguidance 1.7 and later ship only
# manylinux_2_31 wheels, and a list without that tag made pip pick 1.6.1, which localspec cannot use (issue 25).
GLIBC=${GLIBC:-35}
plats=(--platform manylinux2014_x86_64 --platform any)
for v in $(seq 17 "$GLIBC"); do plats+=(--platform "manylinux_2_${v}_x86_64"); done
python3 -m pip download -q --only-binary=:all: --python-version "$PYVER" --implementation cp "${plats[@]}" \
  -d .gpu/whl $deps
rm -f .gpu/whl/numpy-*
rm -rf "$T"
du -sh .gpu
