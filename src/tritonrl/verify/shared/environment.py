"""The environment variables the verifier's processes get: allow-lists, never the caller's whole environment.

    zygote_environment(os.environ)          # the parent starts the zygote (and so every judge and child) with this
    child_environment(os.environ, job_env)  # the zygote's fork replaces its environment with this before isolating

The caller's environment may hold credentials (a cloud key for the dataset mirror, a token for the model hub);
no verifier process needs any of them. The zygote is *executed* with the allow-listed environment, so its
process image (and every fork's memory) never held the rest; a candidate child gets a smaller one still: what
torch, Triton and CUDA read, plus the few paths the harness sets. Names are allowed exactly or by prefix; a value
is passed as it is.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

ZYGOTE_NAMES = frozenset({
    "PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TZ", "TMPDIR", "LD_LIBRARY_PATH", "VIRTUAL_ENV",
    "PYTHONPATH", "PYTHONHASHSEED", "PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE", "PYTHONWARNINGS",
    "PYTHONFAULTHANDLER", "XDG_CACHE_HOME",
})
# tritonrl's own switches and test seams; what torch, Triton, CUDA and the math libraries read
ZYGOTE_PREFIXES = ("TRITONRL_", "TRITON_", "TORCH_", "TORCHINDUCTOR_", "CUDA_", "NVIDIA_", "CUBLAS_", "CUDNN_",
                   "OMP_", "MKL_", "OPENBLAS_", "KMP_", "LC_")
CHILD_NAMES = frozenset({"LANG", "LANGUAGE", "TZ", "LD_LIBRARY_PATH"})
CHILD_PREFIXES = ("TRITON_", "CUDA_", "NVIDIA_", "OMP_", "MKL_", "OPENBLAS_", "KMP_", "LC_")
CHILD_PATH = "/usr/bin:/bin"  # nothing may be executed in the child; a minimal PATH for libraries that read it


def _allowed(environ: Mapping[str, str], names: frozenset[str], prefixes: tuple[str, ...]) -> dict[str, str]:
    return {k: v for k, v in environ.items() if k in names or k.startswith(prefixes)}


def zygote_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The zygote's environment: the allow-listed part of ``environ``."""
    return _allowed(environ, ZYGOTE_NAMES, ZYGOTE_PREFIXES)


def child_environment(environ: Mapping[str, str], job_env: Mapping[str, str], workdir: str) -> dict[str, str]:
    """A candidate child's environment: the allow-listed part of the zygote's, the job's own variables
    (``CUDA_VISIBLE_DEVICES``), and its caches, temp files and ``$HOME`` in its own directory (``workdir``)."""
    env = _allowed(environ, CHILD_NAMES, CHILD_PREFIXES)
    env.update(job_env)
    env.update({"PATH": CHILD_PATH, "HOME": workdir, "TMPDIR": workdir, "TRITON_CACHE_DIR": f"{workdir}/.triton",
                "TORCHINDUCTOR_CACHE_DIR": f"{workdir}/.inductor", "CUDA_CACHE_PATH": f"{workdir}/.nv"})
    return env


def replace_environ(env: Mapping[str, str]) -> None:
    """This process's environment becomes ``env`` exactly (``os.environ`` and the C library's, through it)."""
    for key in [k for k in os.environ if k not in env]:
        del os.environ[key]
    os.environ.update(env)
