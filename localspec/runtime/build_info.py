"""What this llama.cpp build can do: GPU offload, backends and devices (for `localspec doctor`)."""

from __future__ import annotations

import ctypes
import glob
import os

from localspec.runtime import llama
from localspec.runtime.llama import lib

_DEV_TYPES = {0: "CPU", 1: "GPU", 2: "IGPU", 3: "ACCEL"}


def _ggml_lib():
    """ggml's device registry is not bound by llama-cpp-python, so bind the few calls we need ourselves."""
    libdir = os.path.join(os.path.dirname(lib.__file__), "lib")
    for pattern in ("libggml.so*", "libggml.dylib", "ggml.dll"):
        for path in sorted(glob.glob(os.path.join(libdir, pattern))):
            try:
                g = ctypes.CDLL(path)
            except OSError:
                continue
            if hasattr(g, "ggml_backend_dev_count"):
                g.ggml_backend_dev_count.restype = ctypes.c_size_t
                g.ggml_backend_dev_get.restype = ctypes.c_void_p
                g.ggml_backend_dev_get.argtypes = [ctypes.c_size_t]
                for fn in ("ggml_backend_dev_name", "ggml_backend_dev_description"):
                    getattr(g, fn).restype = ctypes.c_char_p
                    getattr(g, fn).argtypes = [ctypes.c_void_p]
                g.ggml_backend_dev_type.restype = ctypes.c_int
                g.ggml_backend_dev_type.argtypes = [ctypes.c_void_p]
                g.ggml_backend_dev_memory.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_size_t),
                                                      ctypes.POINTER(ctypes.c_size_t)]
                return g
    return None


def device_handles() -> dict[str, int]:
    """Each ggml device's name and handle (what llama_model_params.devices takes)."""
    llama.init()
    g = _ggml_lib()
    if g is None:
        return {}
    out = {}
    for i in range(g.ggml_backend_dev_count()):
        dev = g.ggml_backend_dev_get(i)
        out[(g.ggml_backend_dev_name(dev) or b"").decode()] = dev
    return out


def devices() -> list[dict]:
    llama.init()
    g = _ggml_lib()
    if g is None:
        return []
    out = []
    for i in range(g.ggml_backend_dev_count()):
        dev = g.ggml_backend_dev_get(i)
        free, total = ctypes.c_size_t(0), ctypes.c_size_t(0)
        g.ggml_backend_dev_memory(dev, ctypes.byref(free), ctypes.byref(total))
        out.append({
            "name": (g.ggml_backend_dev_name(dev) or b"").decode(),
            "description": (g.ggml_backend_dev_description(dev) or b"").decode(),
            "type": _DEV_TYPES.get(g.ggml_backend_dev_type(dev), "?"),
            "memory_total": total.value,
            "memory_free": free.value,
        })
    return out


def backend_info() -> dict:
    """Summary of the build: which accelerator backend (CUDA, Metal, Vulkan, ...) or CPU, and its devices."""
    devs = devices()
    gpu_names = [d["name"] for d in devs if d["type"] in ("GPU", "IGPU")]
    sysinfo = lib.llama_print_system_info().decode("utf-8", "replace").strip()
    backend = "CPU"
    for name in ("CUDA", "Metal", "Vulkan", "ROCm", "HIP", "SYCL", "OpenCL", "MUSA", "CANN"):
        if any(n.upper().startswith(name.upper()) for n in gpu_names) or f"{name.upper()} :" in sysinfo.upper():
            backend = name
            break
    return {
        "llama_cpp_python": getattr(lib, "__version__", None) or _pkg_version("llama-cpp-python"),
        "gpu_offload": bool(lib.llama_supports_gpu_offload()),
        "backend": backend,
        "devices": devs,
        "mmap": bool(lib.llama_supports_mmap()),
        "system_info": sysinfo,
    }


def _pkg_version(name: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return None
