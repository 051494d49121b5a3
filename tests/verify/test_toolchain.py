"""The GPU child's toolchain helper (``child/toolchain.py``), exercised on any machine with Triton's ``ptxas``.

In a fresh process: the child's view and identity (``isolate``), the helper forked, Triton routed to it, the
system-call filter on; then a Triton kernel is compiled for an H100 (``sm_90``: no GPU needed, ``ptxas`` runs in the
helper) while ``ptxas`` run directly is refused, the helper refuses every request that is not Triton's own, and a
native module handed over as a sealed ``memfd`` loads under the filter (what a GPU child does with each launcher).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest

from tests.verify.test_sandbox import NATIVE_MODULE

PROBE = textwrap.dedent(r'''
    import json, os, subprocess, sys, tempfile
    import torch, triton, triton.language as tl
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from tritonrl.verify.child import seccomp, toolchain
    from tritonrl.verify.child.isolation import isolate


    @triton.jit
    def scale(x, y, n, B: tl.constexpr):
        offs = tl.program_id(0) * B + tl.arange(0, B)
        tl.store(y + offs, tl.load(x + offs, mask=offs < n) * 2, mask=offs < n)


    job, module = sys.argv[1:3]
    sealed = toolchain._sealed(module) if module else None  # made before the filter, as the helper makes one
    os.chdir(job)
    os.environ.update(TMPDIR="/proc/self/cwd", TRITON_CACHE_DIR="/proc/self/cwd/.triton", HOME="/proc/self/cwd")
    tempfile.tempdir = None
    report = isolate(job, "cuda", True, True)
    helper = toolchain.Toolchain.start()
    toolchain._tools()
    toolchain.route_triton(helper)
    out = {"report": report.to_dict(), "filter": seccomp.install()}
    def attempt(name, fn):
        try:
            out[name] = repr(fn())[:200]
        except BaseException as exc:
            out[name] = f"{type(exc).__name__}: {exc}"[:300]
    src = ASTSource(scale, {"x": "*fp32", "y": "*fp32", "n": "i32", "B": "constexpr"}, constexprs={"B": 128})
    attempt("cubin", lambda: len(triton.compile(src, target=GPUTarget("cuda", 90, 32)).asm["cubin"]) > 0)
    ptxas = sorted(toolchain._tools())[0]
    attempt("ptxas_direct", lambda: subprocess.run([ptxas, "--version"]))
    attempt("shell", lambda: helper.ask({"op": "run", "argv": ["/bin/sh", "-c", "id"]}))
    attempt("outside", lambda: helper.ask({"op": "run", "argv": [ptxas, "-o", "/dev/shm/x", "a.ptx"]}))
    attempt("type_name", lambda: helper.ask({"op": "launcher", "signature": ['*fp32); system("id"']}))
    attempt("source", lambda: helper.ask({"op": "build", "src": "int main(void) { return 0; }"}))
    if sealed is not None:
        attempt("sealed_write", lambda: os.write(sealed, b"x"))
        attempt("sealed_module", lambda: toolchain.load_sealed("native_answer", sealed).answer())
    with open("probe.json", "w") as fh:
        json.dump(out, fh)
''')


def _ptxas() -> bool:
    import triton

    return (Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "ptxas").exists()


def _module(tmp: Path) -> str:
    """A native Python module built here ('' without a C compiler or Python's headers)."""
    cc, include = shutil.which("cc") or shutil.which("gcc"), sysconfig.get_paths()["include"]
    if cc is None or not os.path.exists(os.path.join(include, "Python.h")):
        return ""
    (tmp / "answer.c").write_text(NATIVE_MODULE)
    subprocess.run([cc, "-shared", "-fPIC", f"-I{include}", "-o", str(tmp / "answer.so"), str(tmp / "answer.c")],
                   check=True)
    return str(tmp / "answer.so")


@pytest.mark.skipif(os.geteuid() != 0, reason="enters the child's view: needs root")
@pytest.mark.skipif(not _ptxas(), reason="this Triton ships no ptxas")
def test_toolchain_helper_compiles_for_the_gpu_under_the_filter(tmp_path):
    job = tmp_path / "job"
    job.mkdir()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    env.pop("TRITON_INTERPRET", None)
    (tmp_path / "probe.py").write_text(PROBE)  # @triton.jit needs its source in a file
    done = subprocess.run([sys.executable, str(tmp_path / "probe.py"), str(job), _module(tmp_path)],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads((job / "probe.json").read_text())
    assert out["filter"] and out["report"]["fs_isolated"] and out["report"]["unprivileged"], out
    assert out["cubin"] == "True", out["cubin"]
    assert "Operation not permitted" in out["ptxas_direct"]
    assert "only Triton's ptxas" in out["shell"] and "outside the job directory" in out["outside"]
    assert "not a Triton type name" in out["type_name"] and "unknown request" in out["source"]
    if "sealed_module" in out:
        assert out["sealed_module"] == "42" and "Operation not permitted" in out["sealed_write"], out


def test_signatures_take_triton_type_names_only():
    from tritonrl.verify.shared.launcher_source import ToolchainError, signature_names

    assert signature_names(["*fp32", ["i32", "fp8e4nv"], "*kbf16", "constexpr", "tensordesc<fp16[64, 64]>"]) == \
        ("*fp32", ("i32", "fp8e4nv"), "*kbf16", "constexpr", "tensordesc<fp16[64, 64]>")
    for bad in ('*fp32); system("id"', "i32;", "fp32\n", "tensordesc<fp16[64](x)>", 3):
        with pytest.raises(ToolchainError):
            signature_names([bad])


TWO_LAUNCHERS = textwrap.dedent(r'''
    import sys
    from tritonrl.verify.child import toolchain

    answers = []
    for path in sys.argv[1:]:
        fd = toolchain._sealed(path)  # as the helper hands each launcher over: a new memfd, maybe a reused number
        answers.append(toolchain.load_sealed("__triton_launcher", fd).answer())
    print(answers)
''')


def test_launchers_of_one_name_load_as_themselves(tmp_path):
    """Every Triton launcher is a module named ``__triton_launcher``; a kernel's launcher must not be answered with an
    earlier kernel's (on an H100 a candidate with two kernels failed: "function takes exactly 25 arguments (17 given)"
    when the second launcher came in under the first one's freed ``/proc/self/fd`` number)."""
    cc, include = shutil.which("cc") or shutil.which("gcc"), sysconfig.get_paths()["include"]
    if cc is None or not os.path.exists(os.path.join(include, "Python.h")):
        pytest.skip("needs a C compiler and Python's headers")
    paths = []
    for answer in (1, 2, 3):
        src = NATIVE_MODULE.replace("native_answer", "__triton_launcher").replace("42", str(answer))
        (tmp_path / f"l{answer}.c").write_text(src)
        so = tmp_path / f"l{answer}.so"
        subprocess.run([cc, "-shared", "-fPIC", f"-I{include}", "-o", str(so), str(tmp_path / f"l{answer}.c")],
                       check=True)
        paths.append(str(so))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    done = subprocess.run([sys.executable, "-c", TWO_LAUNCHERS, *paths], capture_output=True, text=True, env=env,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[1, 2, 3]"
