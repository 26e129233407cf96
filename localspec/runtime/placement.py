"""Where a loaded model's layers and weights sit, read from what llama.cpp logs while loading it.

Why from the log: llama.cpp has no API that says which device holds which layer; its loader says it in one line
("offloaded 13/25 layers to GPU", the output layer counted as one) and names each weight buffer with its size
("CUDA0 model buffer size = 430.00 MiB", "CPU_Mapped ...").
"""

from __future__ import annotations

import re

_OFFLOADED = re.compile(r"offloaded (\d+)/(\d+) layers to GPU")
_BUFFER = re.compile(r"(\S+) model buffer size =\s*([0-9.]+) MiB")


def _device_of(buffer: str) -> str:
    """The device a weight buffer lives on: host buffers (CPU_Mapped, CPU_REPACK, CUDA_Host) are the CPU's;
    Metal_Mapped is the GPU's memory mapped from the file."""
    if buffer.upper().startswith("CPU") or buffer.endswith("_Host"):
        return "CPU"
    return buffer.removesuffix("_Mapped")


def placement(log_text: str, n_layer: int) -> dict:
    """{"layers": {device: count}, "layers_total": n, "buffers_mib": {buffer: MiB}} for one model load.

    Layers count as llama.cpp counts them: the repeating layers plus the output layer. Where several GPUs share
    the offloaded layers, they are reported together under their names joined by "+"."""
    buffers: dict[str, float] = {}
    for name, mib in _BUFFER.findall(log_text):
        buffers[name] = buffers.get(name, 0.0) + float(mib)
    total = n_layer + 1
    m = _OFFLOADED.search(log_text)
    on_gpu = min(int(m.group(1)), total) if m else 0
    gpus = sorted({d for d in map(_device_of, buffers) if d != "CPU"})
    layers: dict[str, int] = {}
    if on_gpu:
        layers["+".join(gpus) or "GPU"] = on_gpu
    if total - on_gpu:
        layers["CPU"] = total - on_gpu
    return {"layers": layers, "layers_total": total, "buffers_mib": {k: round(v, 2) for k, v in buffers.items()}}
