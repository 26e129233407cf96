"""`localspec doctor [--json]`: the llama.cpp build this installation runs on, as a subprocess sees it."""

from __future__ import annotations

import json

import pytest

from tests.cli_helpers import run_localspec


@pytest.fixture(scope="module")
def report() -> dict:
    proc = run_localspec("doctor", "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_json_reports_backend_offload_devices_packages(report):
    b = report["llama_cpp"]
    assert b["backend"] in ("CPU", "CUDA", "Metal", "Vulkan", "ROCm", "HIP", "SYCL", "OpenCL", "MUSA", "CANN")
    assert isinstance(b["gpu_offload"], bool)
    assert b["devices"], "llama.cpp always has at least its CPU device"
    for d in b["devices"]:
        assert d["name"] and d["type"] in ("CPU", "GPU", "IGPU", "ACCEL")
        assert isinstance(d["memory_total"], int)
    if b["backend"] == "CPU":
        assert not any(d["type"] in ("GPU", "IGPU") for d in b["devices"])
    else:
        assert b["gpu_offload"]
    pk = report["packages"]
    for name in ("localspec", "llama-cpp-python", "gguf", "numpy"):
        assert pk[name], name  # installed, so a version string
    assert pk["llama-cpp-python"] == b["llama_cpp_python"]
    assert report["python"].count(".") == 2


def test_self_test_runs_on_the_cpu_and_on_every_gpu_the_build_offloads_to(report):
    b = report["llama_cpp"]
    tests = {t["device"]: t for t in report["self_test"]}
    gpus = [d["name"] for d in b["devices"] if d["type"] in ("GPU", "IGPU")] if b["gpu_offload"] else []
    assert list(tests) == ["CPU", *gpus]
    for name, t in tests.items():
        assert t["ok"], t["failure"]  # exit status 0 (the fixture) says the same
        assert sum(t["layers"].values()) == t["layers_total"] == 3  # the tiny model: 2 layers + output
    assert tests["CPU"]["layers"] == {"CPU": 3} and tests["CPU"]["n_gpu_layers"] == 0
    for name in gpus:
        assert tests[name]["layers"] == {name: 3}


def test_it_says_which_chat_template_each_model_file_renders_with(report):
    from localspec.models.selection import demo_model_path

    demo = demo_model_path()
    if demo is None:
        pytest.skip("needs the packaged demo model")
    found = {t["path"]: t for t in report["chat_templates"]}
    assert found[str(demo)]["source"] == "file" and found[str(demo)]["describe"] == "the file's own"
    proc = run_localspec("doctor", "--no-self-test")
    assert f"  {demo.name}: the file's own" in proc.stdout


def test_no_self_test_flag_skips_it():
    proc = run_localspec("doctor", "--json", "--no-self-test")
    assert proc.returncode == 0 and json.loads(proc.stdout)["self_test"] is None


def test_text_report_agrees_with_json(report):
    proc = run_localspec("doctor")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    b = report["llama_cpp"]
    assert f"llama.cpp backend: {b['backend']}" in out
    assert ("GPU offload supported" if b["gpu_offload"] else "GPU offload not supported") in out
    for d in b["devices"]:
        assert d["name"] in out
    for name, ver in report["packages"].items():
        assert name in out and (ver or "not installed") in out
    assert f"Python {report['python']}" in out
    for t in report["self_test"]:
        assert f"{t['device']:8} ok in" in out and f"{t['layers'][t['device']]} on {t['device']}" in out


def test_draft_heads_this_build_runs_are_reported(report):
    heads = report["heads"]
    assert heads["kinds"] == {"mtp": True, "eagle3": True, "dflash": True} and heads["missing"] == []
    assert heads["symbols"]["llama_set_embeddings_layer_inp"] == "_Z30llama_set_embeddings_layer_inpP13llama_contextjb"
    assert "draft heads: MTP, EAGLE-3, DFlash (llama.cpp's staging symbols found)" in run_localspec("doctor").stdout


def test_a_build_without_the_staging_symbols_is_said_plainly():
    from localspec.commands.doctor import heads_line

    line = heads_line({"kinds": {"mtp": True, "eagle3": False, "dflash": False},
                       "missing": ["llama_set_embeddings_layer_inp"]})
    assert line == ("draft heads: this llama.cpp build lacks llama_set_embeddings_layer_inp, so EAGLE-3, DFlash heads "
                    "cannot draft (MTP can); llama-cpp-python 0.3.36's build has them")
