"""YAML read strictly: a key given twice in one mapping is an error naming the file and both lines.

    data = load_yaml("configs/smoke.yaml")           # ConfigError on a duplicate key or invalid YAML
    data, duplicates = read_yaml(text, "x.yaml")     # every duplicate, for ``tritonrl config validate``

PyYAML keeps the last of two equal keys without a word, so a second ``pipeline:`` section silently drops the
first one's settings. ``UniqueKeyLoader`` (PyYAML's ``SafeLoader``, checking each mapping's keys as it builds it)
records every duplicate instead. Merge keys (``<<: *base``) are YAML's way to override, and are not duplicates.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from tritonrl.errors import ConfigError


class UniqueKeyLoader(yaml.SafeLoader):
    """A ``SafeLoader`` that records (in ``duplicates``) each key seen twice in one mapping, with both lines."""

    def __init__(self, stream) -> None:
        super().__init__(stream)
        self.duplicates: list[tuple[Any, int, int]] = []  # (key, line, first line), lines from 1

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        first_lines: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            try:
                first = first_lines.setdefault(key, line)
            except TypeError:  # an unhashable key: PyYAML's own error follows
                continue
            if first != line:
                self.duplicates.append((key, line, first))
        return super().construct_mapping(node, deep)


def read_yaml(text: str, where: str) -> tuple[Any, list[str]]:
    """The document in ``text`` (last key wins, as PyYAML does) and one message per duplicate key,
    ``"<where>:<line>: duplicate key ..."``. Invalid YAML is a ``ConfigError`` naming ``where``."""
    loader = UniqueKeyLoader(text)
    try:
        data = loader.get_single_data()
    except yaml.YAMLError as exc:
        raise ConfigError(_invalid(exc, where)) from None
    finally:
        loader.dispose()
    messages = [f"{where}:{line}: duplicate key {key!r} (first at line {first}); YAML would keep only the last, so "
                "merge the two" for key, line, first in loader.duplicates]
    return data, messages


def _invalid(exc: yaml.YAMLError, where: str) -> str:
    mark = getattr(exc, "problem_mark", None)
    at = f"{where}:{mark.line + 1}" if mark is not None else where
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    return f"{at}: not valid YAML: {problem}"


def load_yaml(path: str | Path) -> Any:
    """The YAML document in the file at ``path``; a missing file, invalid YAML or a duplicate key is a one-line
    ``ConfigError`` (the first duplicate; ``read_yaml`` gives them all)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from None
    data, duplicates = read_yaml(text, str(path))
    if duplicates:
        raise ConfigError(duplicates[0])
    return data
