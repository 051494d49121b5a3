"""A script of the repository (``benchmarks/serve_load.py``) imported as a module, for tests of its pieces."""

from __future__ import annotations

import importlib.util
import sys
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def load_script(path: str, name: str | None = None) -> types.ModuleType:
    """The script at ``path`` (relative to the repository's root) as a module named ``name`` (default: its stem),
    registered in ``sys.modules`` before it runs: a dataclass in it looks its module up while the class is made."""
    name = name or Path(path).stem
    spec = importlib.util.spec_from_file_location(name, ROOT / path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
