"""Moved to localspec/runtime/tinymodel.py (`localspec doctor` writes its self-test model with it); this name stays
so that test files written against it on other branches still import."""

from localspec.runtime.tinymodel import *  # noqa: F401,F403
from localspec.runtime.tinymodel import _pieces  # noqa: F401
