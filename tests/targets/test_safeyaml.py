"""YAML limits before expansion: alias bombs, deep nesting, size and NUL are refused
with a message naming the limit, in milliseconds, for files and form fields alike."""

from __future__ import annotations

import pytest

from app.targets import safeyaml
from app.targets.schema import TargetsFileError, parse_targets


def _bomb(levels: int) -> str:
    lines = ['l0: &l0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [f"l{i}: &l{i} [{','.join([f'*l{i - 1}'] * 9)}]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


def test_an_alias_bomb_is_refused_before_expansion() -> None:
    with pytest.raises(safeyaml.YamlLimitError, match="alias"):
        safeyaml.load(_bomb(9), safeyaml.FIELD_LIMITS)
    with pytest.raises(safeyaml.YamlLimitError):
        safeyaml.load(_bomb(12))  # a file: larger limits, still refused
    with pytest.raises(TargetsFileError, match=r"t\.yaml: refused"):
        parse_targets(_bomb(12), "t.yaml")


def test_deep_nesting_size_and_nul_are_refused() -> None:
    with pytest.raises(safeyaml.YamlLimitError, match="deep"):
        safeyaml.load("[" * 20_000 + "]" * 20_000)
    with pytest.raises(safeyaml.YamlLimitError, match="larger than"):
        safeyaml.load("a: " + "x" * 20_000, safeyaml.FIELD_LIMITS)
    with pytest.raises(safeyaml.YamlLimitError, match="NUL"):
        safeyaml.load("a: b\x00")


def test_ordinary_documents_with_a_few_aliases_load() -> None:
    doc = "base: &b {cclass: APP, purity: self}\nmode: *b\n"
    assert safeyaml.load(doc, safeyaml.FIELD_LIMITS) == {
        "base": {"cclass": "APP", "purity": "self"},
        "mode": {"cclass": "APP", "purity": "self"},
    }
