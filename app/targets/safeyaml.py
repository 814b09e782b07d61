"""YAML with limits checked before anything is expanded (files and form fields alike).

PyYAML's ``safe_load`` builds every node an alias names again (the "billion laughs"
alias bomb: a 1 KB document that expands into gigabytes) and recurses into nesting
(thousands of ``[`` give a RecursionError). :func:`load` first walks the event stream,
which neither expands aliases nor recurses, and refuses the document when it is too big
(bytes), too deep (nesting), uses too many aliases, or would expand into too many nodes
(counted with each alias standing for the size of what it names). Only a document
within every limit is then composed. Callers that serve requests run it in a worker
thread, never on the event loop; with these limits it takes milliseconds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml

# libyaml's parser when the wheel has it (Debian and PyPI wheels do): ~50x faster
_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class YamlLimitError(ValueError):
    """The document breaks a limit; the message names the limit (and the line)."""


@dataclass(frozen=True)
class Limits:
    max_bytes: int = 1_048_576
    max_depth: int = 32
    max_aliases: int = 100
    max_nodes: int = 200_000


FILE_LIMITS = Limits()
FIELD_LIMITS = Limits(max_bytes=16_384, max_depth=8, max_aliases=10, max_nodes=2_000)


def _where(event: Any) -> str:
    mark = getattr(event, "start_mark", None)
    return f" (line {mark.line + 1})" if mark is not None else ""


def check(text: str, limits: Limits = FILE_LIMITS) -> None:
    """Raise :class:`YamlLimitError` (or yaml.YAMLError) unless ``text`` is within limits."""
    if len(text.encode("utf-8", "surrogatepass")) > limits.max_bytes:
        raise YamlLimitError(f"larger than {limits.max_bytes} bytes")
    if "\x00" in text:
        raise YamlLimitError("contains a NUL byte")
    # stack of [node count so far, anchor] per open collection
    stack: list[list[Any]] = []
    sizes: dict[str, int] = {}
    aliases = 0
    total = 0

    def add(n: int, event: Any) -> None:
        nonlocal total
        total += n
        if total > limits.max_nodes:
            raise YamlLimitError(
                f"would expand into more than {limits.max_nodes} nodes{_where(event)}"
            )
        if stack:
            stack[-1][0] += n

    for event in yaml.parse(text, Loader=_LOADER):
        if isinstance(event, yaml.AliasEvent):
            aliases += 1
            if aliases > limits.max_aliases:
                raise YamlLimitError(f"more than {limits.max_aliases} aliases{_where(event)}")
            add(sizes.get(event.anchor or "", 1), event)
        elif isinstance(event, yaml.ScalarEvent):
            add(1, event)
            if event.anchor:
                sizes[event.anchor] = 1
        elif isinstance(event, yaml.MappingStartEvent | yaml.SequenceStartEvent):
            if len(stack) >= limits.max_depth:
                raise YamlLimitError(f"nested deeper than {limits.max_depth}{_where(event)}")
            stack.append([1, event.anchor])
        elif isinstance(event, yaml.MappingEndEvent | yaml.SequenceEndEvent):
            size, anchor = stack.pop()
            if anchor:
                sizes[anchor] = size
            add(size, event)


def load(text: str, limits: Limits = FILE_LIMITS) -> Any:
    """``yaml.safe_load(text)`` once :func:`check` passed."""
    check(text, limits)
    return yaml.load(text, Loader=_LOADER)


def depth(value: Any, limit: int) -> int:
    """Nesting depth of plain data (dicts and lists), counting no further than ``limit + 1``."""
    best = 0
    todo: list[tuple[Any, int]] = [(value, 0)]
    while todo:
        v, d = todo.pop()
        if d > limit:
            return d
        best = max(best, d)
        if isinstance(v, dict):
            todo.extend((x, d + 1) for x in v.values())
        elif isinstance(v, list):
            todo.extend((x, d + 1) for x in v)
    return best
