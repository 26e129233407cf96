"""`localspec doctor`: what this installation can use (llama.cpp build, GPU offload, devices, versions)."""

from __future__ import annotations

import json
import platform
import sys
from importlib.metadata import PackageNotFoundError, version

PACKAGES = ("localspec", "llama-cpp-python", "llguidance", "gguf", "textual", "pydantic", "huggingface-hub",
            "platformdirs", "numpy", "jinja2")


def register(sub) -> None:
    p = sub.add_parser("doctor", help="show the llama.cpp build, GPU offload, devices and package versions")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=cmd_doctor)


def collect() -> dict:
    from localspec.runtime.backend import backend_info

    packages = {}
    for name in PACKAGES:
        try:
            packages[name] = version(name)
        except PackageNotFoundError:
            packages[name] = None
    return {"python": sys.version.split()[0], "platform": platform.platform(), "machine": platform.machine(),
            "llama_cpp": backend_info(), "packages": packages}


def cmd_doctor(args) -> int:
    info = collect()
    if args.json:
        print(json.dumps(info, indent=2))
        return 0
    b = info["llama_cpp"]
    print(f"Python {info['python']} on {info['platform']}")
    print(f"llama.cpp backend: {b['backend']}  (GPU offload {'supported' if b['gpu_offload'] else 'not supported'})")
    for d in b["devices"]:
        mem = f", {d['memory_total'] / 2**30:.1f} GiB" if d["memory_total"] else ""
        print(f"  device {d['name']}: {d['type']} {d['description']}{mem}")
    print(f"  {b['system_info']}")
    for name, ver in info["packages"].items():
        print(f"{name:18} {ver or 'not installed'}")
    if not b["gpu_offload"]:
        print("hint: this llama-cpp-python has no GPU backend; reinstall with CMAKE_ARGS=-DGGML_CUDA=on (NVIDIA) "
              "or -DGGML_METAL=on (Apple) to offload layers")
    return 0
