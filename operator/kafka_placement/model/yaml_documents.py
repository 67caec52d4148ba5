"""Parsing YAML streams into plain documents, strictly (duplicate keys refused), with errors that name
the file; the JSON half and the shared rules are in ``model.documents``."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import yaml

from .documents import parser_limit
from .errors import BadInputError
from .jsonio import brief, clip

_MERGE_TAG = "tag:yaml.org,2002:merge"


class StrictSafeLoader(yaml.SafeLoader):
    """PyYAML's safe loader refusing duplicate keys in a mapping (merge keys ``<<`` may be overridden)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Hashable, Any]:
        seen: set[object] = set()
        for key_node, _ in node.value:
            if key_node.tag == _MERGE_TAG:
                continue
            key = self.construct_object(key_node, deep=True)
            try:
                duplicate = key in seen
                seen.add(key)
            except TypeError:  # unhashable: super() reports it with its position
                continue
            if duplicate:
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping",
                    node.start_mark,
                    f"found duplicate key {brief(key)}",
                    key_node.start_mark,
                )
        return super().construct_mapping(node, deep=deep)


def load_yaml_stream(text: str, source: str) -> list[tuple[int, Any]]:
    """Every document of a YAML stream with its 1-based position; empty documents are left out."""
    try:
        docs = list(yaml.load_all(text, Loader=StrictSafeLoader))
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        at = f" at line {mark.line + 1} column {mark.column + 1}" if mark is not None else ""
        problem = getattr(e, "problem", None) or str(e)
        raise BadInputError(f"not valid YAML: {clip(str(problem))}{at}", source) from None
    except (RecursionError, MemoryError, ValueError) as e:
        raise parser_limit("YAML", e, source) from None
    return [(i + 1, d) for i, d in enumerate(docs) if d is not None]
