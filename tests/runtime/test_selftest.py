"""`localspec doctor`'s self-test: each device's check runs in a child process, and what fails is said plainly,
whether the child reports an error, disagrees with itself, crashes or hangs."""

from __future__ import annotations

import subprocess
import sys

import pytest

from localspec.runtime.placement import placement
from localspec.runtime.selftest import compare_rows, run_one, self_test


def test_cpu_self_test_passes_with_every_layer_on_the_cpu(tiny_target):
    [t] = self_test(["CPU"], model=tiny_target)
    assert t["ok"], t["failure"]
    assert t["failure"] is None and t["stage"] is None
    assert t["layers"] == {"CPU": 3} and t["layers_total"] == 3  # 2 repeating layers + the output layer
    assert t["rows"] > 8 and t["judged"] == t["rows"]  # every row compared: the tiny model has no near ties
    assert t["max_abs_diff"] < 1e-2


def test_a_model_written_on_the_fly_when_none_is_given():
    [t] = self_test(["CPU"])
    assert t["ok"] and t["layers"] == {"CPU": 3}


def test_a_truncated_model_fails_at_load_with_llama_cpps_reason(tmp_path, tiny_target):
    bad = tmp_path / "cut.gguf"
    bad.write_bytes(tiny_target.read_bytes()[:5000])
    [t] = self_test(["CPU"], model=bad)
    assert not t["ok"] and t["stage"] == "load"
    assert "could not load" in t["failure"] and t["failure"].endswith("(while loading the model on CPU)")


def test_an_unknown_device_is_named(tiny_target):
    [t] = self_test(["CUDA7"], model=tiny_target)
    assert not t["ok"] and "no llama.cpp device 'CUDA7'" in t["failure"]
    assert "while loading the model on CUDA7" in t["failure"]


def _child(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def test_a_crash_is_reported_with_its_signal_and_stage(tiny_target):
    crash = _child("import os, signal\nprint('stage start'); print('stage load', flush=True)\n"
                   "os.kill(os.getpid(), signal.SIGSEGV)")
    t = run_one(tiny_target, "CUDA0", command=crash)
    assert not t["ok"] and t["stage"] == "load"
    assert t["failure"] == "the child crashed with SIGSEGV while loading the model on CUDA0"


@pytest.mark.slow  # 1-4 s each (the fast tier's budget: under a minute)
def test_a_hang_is_reported_with_its_stage(tiny_target):
    hang = _child("import time\nprint('stage decode', flush=True)\ntime.sleep(30)")
    t = run_one(tiny_target, "CPU", command=hang, timeout=2)
    assert not t["ok"] and t["failure"] == "the child hung for 2 s while decoding one token on CPU"


def test_a_child_that_dies_silently_shows_its_last_stderr_line(tiny_target):
    die = _child("import sys\nprint('stage context', flush=True)\nsys.exit('ggml_abort: out of memory')")
    t = run_one(tiny_target, "CPU", command=die)
    assert t["failure"] == "ggml_abort: out of memory (while creating a context on CPU)"


@pytest.mark.parametrize("single,batch,verdict,judged", [
    ([[0.0, 2.0, 1.0], [3.0, 0.0, 1.0]], [[0.0, 2.001, 1.0], [3.0, 0.1, 1.0]], None, 2),
    ([[0.0, 2.0, 1.0], [3.0, 0.0, 1.0]], [[0.0, 2.0, 1.0], [0.0, 0.0, 1.0]], "row 1 of 2", 2),
    # A near tie (2.0 against 1.9999) may flip between kernels: not judged, so no disagreement.
    ([[0.0, 2.0, 1.9999]], [[0.0, 1.9999, 2.0]], None, 0),
])
def test_compare_rows(single, batch, verdict, judged):
    failure, figures = compare_rows(single, batch)
    assert (failure is None) if verdict is None else (verdict in failure and "batch picks token" in failure)
    assert figures["judged"] == judged and figures["rows"] == len(single)


CUDA_LOG = """load_tensors: offloading output layer to GPU
load_tensors: offloading 31 repeating layers to GPU
load_tensors: offloaded 20/33 layers to GPU
load_tensors:        CUDA0 model buffer size =  2800.00 MiB
load_tensors:    CUDA_Host model buffer size =   400.50 MiB
load_tensors:   CPU_Mapped model buffer size =   280.00 MiB
"""


@pytest.mark.parametrize("log,n_layer,layers", [
    (CUDA_LOG, 32, {"CUDA0": 20, "CPU": 13}),
    ("load_tensors: offloaded 25/25 layers to GPU\nload_tensors: Metal_Mapped model buffer size = 90.0 MiB\n"
     "load_tensors: CPU_Mapped model buffer size = 30.0 MiB\n", 24, {"Metal": 25}),
    ("load_tensors: CPU_Mapped model buffer size = 256.63 MiB\n", 30, {"CPU": 31}),  # a CPU-only build says no more
    ("load_tensors: offloaded 0/31 layers to GPU\n", 30, {"CPU": 31}),
])
def test_placement_from_the_load_log(log, n_layer, layers):
    got = placement(log, n_layer)
    assert got["layers"] == layers and got["layers_total"] == n_layer + 1
    if "CUDA0" in log:
        assert got["buffers_mib"] == {"CUDA0": 2800.0, "CUDA_Host": 400.5, "CPU_Mapped": 280.0}


def test_llama_cpp_errors_go_to_stderr_not_stdout(tmp_path, tiny_target):
    bad = tmp_path / "cut.gguf"
    bad.write_bytes(tiny_target.read_bytes()[:5000])
    code = ("from localspec.runtime.model import Model\ntry:\n    Model(%r)\nexcept Exception as e:\n"
            "    print('caught', type(e).__name__)\n" % str(bad))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env={**__import__("os").environ, "LOCALSPEC_LLAMA_LOG": "1"})
    assert proc.stdout == "caught ModelFileError\n"
    assert "gguf" in proc.stderr.lower() or "llama" in proc.stderr.lower()
