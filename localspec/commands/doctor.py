"""`localspec doctor`: what this installation can use (llama.cpp build, GPU offload, devices, versions)."""

from __future__ import annotations

import json
import platform
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from localspec.terminal import safe_text

PACKAGES = ("localspec", "llama-cpp-python", "llguidance", "gguf", "textual", "pydantic", "huggingface-hub",
            "platformdirs", "numpy", "jinja2")


def register(sub) -> None:
    p = sub.add_parser("doctor", help="show the llama.cpp build, GPU offload, devices and package versions")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--no-self-test", action="store_true",
                   help="skip the self-test (a tiny model loaded and decoded on each device, in a child process)")
    p.set_defaults(func=cmd_doctor)


def self_test_devices(backend: dict) -> list[str]:
    """The CPU (no layers offloaded), and each GPU where the build can offload."""
    gpus = [d["name"] for d in backend["devices"] if d["type"] in ("GPU", "IGPU")] if backend["gpu_offload"] else []
    return ["CPU", *gpus]


def collect(self_test: bool = True) -> dict:
    from localspec.runtime.build_info import backend_info
    from localspec.runtime.selftest import self_test as run_self_test
    from localspec.runtime.staging import report as heads_report

    packages: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            packages[name] = version(name)
        except PackageNotFoundError:
            packages[name] = None
    backend = backend_info()
    return {"python": sys.version.split()[0], "platform": platform.platform(), "machine": platform.machine(),
            "llama_cpp": backend, "packages": packages, "chat_templates": chat_templates(), "heads": heads_report(),
            "self_test": run_self_test(self_test_devices(backend)) if self_test else None}


def chat_templates() -> list[dict]:
    """Which chat template each model file here renders with (its own, its family's, or ChatML): the installed
    files and the demo model."""
    from localspec.models.paths import get_paths
    from localspec.models.registry import load_registry
    from localspec.models.selection import demo_model_path
    from localspec.prompting.template_file import file_template

    paths = [f.path for f in load_registry(get_paths().registry_file).files if f.status() != "missing"]
    demo = demo_model_path()
    if demo is not None and str(demo) not in paths:
        paths.append(str(demo))
    found = {p: file_template(p) for p in paths}
    return [{"path": p, **t.to_dict(), "describe": t.describe()} for p, t in found.items()]


KIND_NAMES = {"mtp": "MTP", "eagle3": "EAGLE-3", "dflash": "DFlash"}


def heads_line(heads: dict) -> str:
    """What doctor says about draft heads: which kinds this build runs, and what it lacks for the others."""
    ok = [KIND_NAMES[k] for k, v in heads["kinds"].items() if v]
    off = [KIND_NAMES[k] for k, v in heads["kinds"].items() if not v]
    if not off:
        return f"draft heads: {', '.join(ok)} (llama.cpp's staging symbols found)"
    return (f"draft heads: this llama.cpp build lacks {', '.join(heads['missing'])}, so {', '.join(off)} heads cannot "
            f"draft" + (f" ({', '.join(ok)} can)" if ok else "") + "; llama-cpp-python 0.3.36's build has them")


def cmd_doctor(args) -> int:
    info = collect(self_test=not args.no_self_test)
    failed = any(not t["ok"] for t in info["self_test"] or ())
    if args.json:
        print(json.dumps(info, indent=2))
        return 1 if failed else 0
    b = info["llama_cpp"]
    print(f"Python {info['python']} on {info['platform']}")
    print(f"llama.cpp backend: {b['backend']}  (GPU offload {'supported' if b['gpu_offload'] else 'not supported'})")
    for d in b["devices"]:
        mem = f", {d['memory_total'] / 2**30:.1f} GiB" if d["memory_total"] else ""
        print(f"  device {d['name']}: {d['type']} {d['description']}{mem}")
    print(f"  {b['system_info']}")
    print(heads_line(info["heads"]))
    for name, ver in info["packages"].items():
        print(f"{name:18} {ver or 'not installed'}")
    if info["chat_templates"]:
        print("chat templates (a file without one gets its family's: --chat-template FAMILY|FILE picks another):")
        for t in info["chat_templates"]:
            print(f"  {safe_text(Path(t['path']).name)}: {safe_text(t['describe'], 500)}")
    if info["self_test"] is not None:
        print("self-test (a tiny model loaded, one token decoded, a batch checked against one token at a time; "
              "a child process per device):")
        for t in info["self_test"]:
            if t["ok"]:
                where = ", ".join(f"{n} on {d}" for d, n in t["layers"].items())
                print(f"  {t['device']:8} ok in {t['seconds']:.1f} s; layers: {where} (of {t['layers_total']})")
            else:
                print(f"  {t['device']:8} FAILED: {t['failure']}")
    if not b["gpu_offload"]:
        print("hint: this llama-cpp-python has no GPU backend; reinstall with CMAKE_ARGS=-DGGML_CUDA=on (NVIDIA) "
              "or -DGGML_METAL=on (Apple) to offload layers")
    return 1 if failed else 0
