"""Build llama.cpp's `llama-server` from the llama.cpp vendored in the installed llama-cpp-python's source release,
once per version and set of build flags, into a cache folder that outlives the checkout. Prints the binary's path.

    python scripts/llama_server.py            # build if needed, print the path
    python scripts/llama_server.py --path     # print where it would be; exit 1 when it is not built yet
    python scripts/llama_server.py --tool llama-speculative-simple     # another of llama.cpp's programs
    python scripts/llama_server.py --cpu-flags  # the CMake instruction-set flags for this CPU (.ci/run's CMAKE_ARGS)

`--tool llama-speculative-simple` builds llama.cpp's minimal speculative-decoding loop (examples/, so with
LLAMA_BUILD_EXAMPLES on, a cache key of its own), which the draft-head tests run on the same tiny files as localspec's
port of its heads to compare the drafted tokens (tests/speculative/heads/test_llama_cpp_cross_check.py): about 5
minutes on 2 cores, once per llama-cpp-python version (LOCALSPEC_SPEC_SIMPLE points the tests at it).

Why: the remote backend (`--backend openai`) is tested against a real llama-server (tests/remote/test_llama_server.py),
and its build takes minutes on a small CPU: CI builds it once and reuses it (keyed by the llama-cpp-python version
and the flags, so an upgrade builds a new one). The cache folder is LOCALSPEC_CI_CACHE, else
$XDG_CACHE_HOME/localspec-ci (~/.cache/localspec-ci).

The flags pin the instruction sets instead of -march=native (cpu_flags: AMX kernels segfault on one CI machine,
AVX-512 is missing on another). The binary is linked statically (no libllama.so beside it to go missing) and built without the web UI, curl
or OpenSSL (nothing is downloaded at build time, and the tests speak plain HTTP on loopback).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
from importlib import metadata
from pathlib import Path



def cpu_flags(cpuinfo: str | None = None) -> tuple[str, ...]:
    """The instruction sets pinned for this CPU (its /proc/cpuinfo flags; elsewhere the AVX2 set). Never
    -march=native: one CI machine advertises AMX, whose llama.cpp kernels segfault on it; and AVX-512 only where the
    CPU has it, since another (an AMD EPYC without it) dies of an illegal instruction in a build that assumed it."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text()
        except OSError:
            cpuinfo = ""
    have = set()
    for line in cpuinfo.splitlines():
        if line.startswith("flags"):
            have = set(line.partition(":")[2].split())
            break
    flags = ["-DGGML_NATIVE=OFF", "-DGGML_AVX2=ON", "-DGGML_FMA=ON", "-DGGML_F16C=ON"]
    if "avx512f" in have:
        flags.append("-DGGML_AVX512=ON")
    return tuple(flags)


CPU_FLAGS = cpu_flags()
BUILD_FLAGS = CPU_FLAGS + ("-DCMAKE_BUILD_TYPE=Release", "-DBUILD_SHARED_LIBS=OFF", "-DLLAMA_BUILD_TESTS=OFF",
                           "-DLLAMA_BUILD_EXAMPLES=OFF", "-DLLAMA_BUILD_UI=OFF", "-DLLAMA_USE_PREBUILT_UI=OFF",
                           "-DLLAMA_CURL=OFF", "-DLLAMA_OPENSSL=OFF", "-DGGML_CCACHE=OFF", "-DGGML_OPENMP=OFF")
PACKAGE = "llama-cpp-python"
SERVER = "llama-server"
TOOLS = (SERVER, "llama-speculative-simple")


def build_flags(tool: str = SERVER) -> tuple[str, ...]:
    """The server's flags; an example program needs the examples built (the server's cache key stays as it was)."""
    if tool == SERVER:
        return BUILD_FLAGS
    return tuple("-DLLAMA_BUILD_EXAMPLES=ON" if f == "-DLLAMA_BUILD_EXAMPLES=OFF" else f for f in BUILD_FLAGS)


def cache_root() -> Path:
    explicit = os.environ.get("LOCALSPEC_CI_CACHE")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "localspec-ci"


def version() -> str:
    return metadata.version(PACKAGE)


def binary_path(ver: str | None = None, tool: str = SERVER) -> Path:
    ver = ver or version()
    key = hashlib.sha256(" ".join(build_flags(tool)).encode()).hexdigest()[:10]
    return cache_root() / f"{tool}-{ver}-{key}" / tool


def _run(cmd: list[str], log, cwd: Path | None = None) -> None:
    print("+ " + " ".join(cmd), file=log, flush=True)
    subprocess.run(cmd, cwd=cwd, check=True, stdout=log, stderr=subprocess.STDOUT)


def _sdist(ver: str, into: Path, log) -> Path:
    """The llama-cpp-python source release (pip's download: its cache, its index settings)."""
    found = sorted(into.glob(f"llama_cpp_python-{ver}.tar.gz"))
    if not found:
        _run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", "--dest", str(into),
              f"{PACKAGE}=={ver}"], log)
        found = sorted(into.glob(f"llama_cpp_python-{ver}.tar.gz"))
    if not found:
        raise SystemExit(f"error: pip downloaded no llama_cpp_python-{ver}.tar.gz into {into}")
    return found[0]


def build(ver: str, log, tool: str = SERVER) -> Path:
    out = binary_path(ver, tool)
    work = cache_root() / "work"
    work.mkdir(parents=True, exist_ok=True)
    tarball = _sdist(ver, work, log)
    src = work / f"llama_cpp_python-{ver}"
    if not (src / "vendor" / "llama.cpp" / "CMakeLists.txt").is_file():
        with tarfile.open(tarball) as tar:
            tar.extractall(work, filter="data") if hasattr(tarfile, "data_filter") else tar.extractall(work)
    llama = src / "vendor" / "llama.cpp"
    build_dir = work / f"build-{out.parent.name}"
    _run(["cmake", "-S", str(llama), "-B", str(build_dir), *build_flags(tool)], log)
    jobs = str(os.cpu_count() or 2)
    _run(["cmake", "--build", str(build_dir), "--target", tool, "-j", jobs], log)
    built = next((p for p in (build_dir / "bin" / tool, build_dir / "tools" / "server" / tool) if p.is_file()), None)
    if built is None:
        raise SystemExit(f"error: the build finished without a {tool} binary in {build_dir}")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    shutil.copy2(built, tmp)
    os.replace(tmp, out)  # whole or absent: a build killed half-way is never taken for a finished one
    shutil.rmtree(build_dir, ignore_errors=True)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--path", action="store_true", help="print where the binary is; exit 1 if it is not built")
    p.add_argument("--log", metavar="FILE", help="build output to FILE (default: stderr)")
    p.add_argument("--tool", choices=TOOLS, default=SERVER, help="which program (default: llama-server)")
    p.add_argument("--cpu-flags", action="store_true",
                   help="print the CMake instruction-set flags for this CPU (CMAKE_ARGS for llama-cpp-python) and exit")
    args = p.parse_args(argv)
    if args.cpu_flags:
        print(" ".join(CPU_FLAGS))
        return 0
    ver = version()
    out = binary_path(ver, args.tool)
    if out.is_file() or args.path:
        print(out)
        return 0 if out.is_file() else 1
    log = open(args.log, "a") if args.log else sys.stderr
    try:
        print(f"building {args.tool} {ver} into {out.parent} (several minutes)", file=sys.stderr, flush=True)
        print(build(ver, log, args.tool))
    finally:
        if args.log:
            log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
