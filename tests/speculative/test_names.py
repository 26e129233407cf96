"""The drafter registry: the one table of drafter names, origins and config keys, checked against what the builder
accepts, what the config file holds and what the drafters really report."""

import pytest

from localspec.errors import ConfigError
from localspec.runtime.context import ContextSettings
from localspec.runtime.pair import load_pair
from localspec.settings.config_toml import Settings
from localspec.speculative import names as registry
from localspec.speculative.builder import build_engine
from localspec.speculative.decoder import GenParams
from localspec.speculative.drafting import DraftingConfig
from localspec.speculative.grammar import GrammarConstraint, tool_call_grammar
from localspec.speculative.policy.hybrid import HybridDrafter


def test_table():
    assert registry.NAMES == ("model", "schema", "history", "ngram", "head")
    assert registry.ORIGINS == ("target", "model", "schema", "history", "ngram", "mtp", "eagle3", "dflash")
    assert registry.help_text() == "model, schema, history, ngram, head"
    assert registry.get("ngram").config_key == "drafters.ngram"
    assert all(d.summary and "\n" not in d.summary for d in registry.DRAFTERS)
    with pytest.raises(ConfigError, match="unknown drafter 'nope'; choose from model, schema, history, ngram, head"):
        registry.get("nope")


def test_parse_names():
    assert registry.parse_names("schema, ngram") == ("schema", "ngram")
    assert registry.parse_names("none") == () and registry.parse_names("") == ()
    with pytest.raises(ConfigError, match="unknown drafter 'spec'; choose from .* or none"):
        registry.parse_names("schema,spec")


def test_config_keys_are_the_config_files():
    settings = Settings()
    assert registry.enabled(settings.get) == registry.NAMES  # every drafter on by default
    off = Settings.model_validate({"drafters": {"ngram": False, "schema": False}})
    assert registry.enabled(off.get) == ("model", "history", "head")


def test_the_builder_takes_the_names_and_the_drafters_report_the_origins(tiny_pair_paths):
    pair = load_pair(*tiny_pair_paths, ctx=ContextSettings(n_ctx=1024))
    with pytest.raises(ConfigError, match="unknown drafter"):
        build_engine(pair, DraftingConfig(drafters=("schema", "spec")))
    engine = build_engine(pair, DraftingConfig(drafters=tuple(registry.NAMES), draft_p_min=0.0))
    hybrid = engine.drafter
    assert isinstance(hybrid, HybridDrafter)
    names = {src.name for src in hybrid.sources} | {hybrid.model.name}
    # The head drafter's origins are its three kinds, one per head file (tests/speculative/heads/ runs each).
    assert names == set(registry.ORIGINS) - {registry.TARGET} - set(registry.get("head").origins)
    assert not hybrid.heads  # the tiny pair has no head
    tools = [{"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": {"x": {"type": "string", "maxLength": 8}}, "required": ["x"]}}}]
    got = engine.generate(pair.target.tokenize("the"), GenParams(max_tokens=40),
                          constraint=GrammarConstraint(pair.target, tool_call_grammar(tools), tools))
    assert set(got.origins) <= set(registry.ORIGINS) and "schema" in got.origins
