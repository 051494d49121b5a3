"""What the candidate child's toolchain helper and the judge share of Triton's launchers (``child/toolchain.py``,
``judge/launchers.py``): a kernel signature checked from its JSON form, Triton's own launcher source for it, its
name in the judge's seed, and Triton's build of it. Trusted code only; nothing of a child's or a judge's.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import sys
from typing import Any

# Triton's type names (``*fp32``, ``*kbf16``, ``i64``, ``fp8e4nv``, ``constexpr``, ``tensordesc<fp16[64, 64]>``): no
# character that could end a C expression or start another
TYPE_NAME = re.compile(r"\*?k?[a-z][a-z0-9_]*|constexpr|nvTmaDesc|tensordesc<[\w\[\], ]+>")
LAUNCHERS = "launchers"  # the seed's folder of launchers the judge built (``tritonrl.verify.judge.launchers``)
MAX_ARGUMENTS = 256  # type names in a launcher's signature, tuples flattened (an honest fused kernel: a few dozen)
MAX_NAME = 64  # characters of one type name
MAX_DESC_DIMS = 5  # dimensions of a tensor descriptor (a GPU's TMA takes 5 at most)


class ToolchainError(RuntimeError):
    """The helper refused a request or failed to answer it."""


def signature_names(value: Any) -> Any:
    """A kernel signature from its JSON form (tuples were lists), every type name checked."""
    if isinstance(value, list):
        return tuple(signature_names(v) for v in value)
    if isinstance(value, str) and TYPE_NAME.fullmatch(value):
        return value
    raise ToolchainError(f"not a Triton type name: {value!r}")


def compile_module(name: str, src: str, where: str) -> str:
    """``src`` (C that Triton generated) compiled by Triton's build into a module in ``where``: its path."""
    from triton.backends.nvidia import driver
    from triton.runtime.build import _build as triton_build

    path = os.path.join(where, name + ".c")
    with open(path, "w") as fh:
        fh.write(src)
    return triton_build(name, path, where, driver.library_dirs(), driver.include_dirs, driver.libraries, [])


def checked_signature(signature: Any, tensordesc: Any) -> tuple[dict[int, Any], list | None]:
    """A launcher's signature from its JSON form, checked: Triton's type names only, at most ``MAX_ARGUMENTS`` of
    them (tuples flattened) of ``MAX_NAME`` characters, a tensor descriptor of ``MAX_DESC_DIMS`` dimensions at most
    (a GPU's TMA has 5): a launcher's source and compile grow with them (a crafted descriptor of 4,000 dimensions
    took gcc 46 s and 1.1 GB). Raises ``ToolchainError``."""
    if not isinstance(signature, (list, tuple)) or not (tensordesc is None or isinstance(tensordesc, (list, tuple))):
        raise ToolchainError("a launcher's signature is a list of type names")
    checked = {i: signature_names(t) for i, t in enumerate(signature)}
    names = _flat(list(checked.values()))
    if len(names) > MAX_ARGUMENTS or any(len(n) > MAX_NAME or n.count(",") >= MAX_DESC_DIMS for n in names):
        raise ToolchainError(f"a launcher's signature past the limits ({len(names)} type names)")
    if tensordesc is not None and len(tensordesc) > len(checked):
        raise ToolchainError("more tensor descriptors than arguments")
    return checked, None if tensordesc is None else [({} if bool(m) else None) for m in tensordesc]


def _flat(value: Any) -> list[str]:
    return [n for v in value for n in _flat(v)] if isinstance(value, (list, tuple)) else [value]


def launcher_source(signature: Any, tensordesc: Any) -> str:
    """Triton's own C launcher for a kernel signature (its JSON form, ``checked_signature``) and which of its
    arguments are tensor descriptors: what the helper builds and what the judge builds into the seed alike."""
    from triton.backends.nvidia import driver

    checked, meta = checked_signature(signature, tensordesc)
    return driver.make_launcher({}, checked, meta)


def launcher_key(src: str) -> str:
    """A launcher's name in the seed: its source and what else its binary depends on (``build_tag``)."""
    return hashlib.sha256(f"{src}\0{build_tag()}".encode()).hexdigest()


@functools.lru_cache(maxsize=1)
def build_tag() -> str:
    """What a launcher's binary depends on besides its source: the Python it is an extension of (its ABI tag and
    version), Triton's version, the machine. The seed's folder outlives a verifier (``<jobs root>``), and one of
    another Python or Triton on the same machine must not find this one's launchers."""
    import platform
    import sysconfig

    import triton

    return "|".join([sys.version, str(sysconfig.get_config_var("EXT_SUFFIX")), triton.__version__, platform.machine()])


def seeded_launcher(seed: str | None, key: str) -> str | None:
    """The judge's build of the launcher whose source hashes to ``key``, in ``seed`` (the judge's Triton build,
    read-only in the child's view), or None."""
    if not seed or not re.fullmatch(r"[0-9a-f]{64}", key):
        return None
    path = os.path.join(seed, LAUNCHERS, key + ".so")
    return path if os.path.isfile(path) and not os.path.islink(path) else None
