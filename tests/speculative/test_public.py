"""The package's public interface (speculative/__init__.py): every name loads from the module it names, and only
on first use."""

import subprocess
import sys

import localspec.speculative as spec


def test_every_public_name_loads_from_its_module():
    assert sorted(spec.__all__) == sorted(spec._PUBLIC)
    for name, module in spec._PUBLIC.items():
        assert getattr(spec, name) is getattr(__import__(f"localspec.speculative.{module}", fromlist=[name]), name)


def test_importing_the_policy_does_not_load_llama_cpp():
    code = "import sys, localspec.speculative.policy.hybrid; print('llama_cpp' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
