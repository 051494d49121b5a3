"""The candidate's sandbox, enforced below Python (docs/verifier.md, "The candidate's sandbox").

Four layers of tests:
- the system-call filter's program, run by a small classic-BPF interpreter here for both architectures it supports
  (so the AArch64 rules are checked on an x86-64 machine), and the filter itself, live, in a fresh process;
- the environment allow-lists;
- the child's view of the files and its identity, entered for real in a forked process (needs root or user
  namespaces; skipped elsewhere);
- the fixtures in ``fixtures/sandbox/`` (``# expect: reject``, ``# error:`` the text the verdict must carry),
  judged by the verifier with static checks off (the runtime alone): each does through *trusted* frames (torch's,
  Triton's, which the audit hook lets through) what the child may not do, so only the sandbox stops it.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.verify.tasks import TASKS
from tests.verify.test_redteam import CUDA, GOOD_RELU, header
from tritonrl.config import VerifyConfig
from tritonrl.verify import Verifier
from tritonrl.verify.child import seccomp
from tritonrl.verify.child.isolation import IsolationReport
from tritonrl.verify.shared.environment import child_environment, zygote_environment
from tritonrl.verify.shared.protections import PROTECTIONS, missing_protections
from tritonrl.verify.shared.verdict import Stage, VerifyResult

DIR = Path(__file__).parent / "fixtures" / "sandbox"
FIXTURES = sorted(DIR.glob("s*.py"))
REPO = Path(__file__).resolve().parents[2]
PACKAGE = Path(__import__("tritonrl").__file__).resolve().parent  # the package the verifier's children import
SOLUTIONS = PACKAGE / "tasks" / "bundled" / "solutions"
SECRET = "tritonrl-sandbox-fake-secret-5e1d"


# ------------------------------------------------------------------ the filter's program
def run_bpf(prog: list, nr: int, arch: int, args: tuple = ()) -> int:
    """What the classic-BPF ``prog`` returns for one call (the instructions seccomp.py emits only)."""
    data = {0: nr & 0xFFFFFFFF, 4: arch}
    for i, a in enumerate((*args, 0, 0, 0, 0, 0, 0)[:6]):
        data[16 + 8 * i] = a & 0xFFFFFFFF
    acc, pc = 0, 0
    while True:
        code, jt, jf, k = prog[pc]
        if code == seccomp.LD_ABS:
            acc, pc = data[k], pc + 1
        elif code == seccomp.RET:
            return k
        else:
            hit = {seccomp.JEQ: acc == k, seccomp.JGE: acc >= k, seccomp.JSET: bool(acc & k)}[code]
            pc += 1 + (jt if hit else jf)


@pytest.mark.parametrize("machine", sorted(seccomp.ARCHES))
def test_filter_program_decides_each_rule(machine):
    prog = seccomp.program(machine)
    arch, nr = seccomp.ARCHES[machine]
    verdict = lambda name, *args: run_bpf(prog, nr[name], arch, args)  # noqa: E731
    for name in ("execve", "execveat", "ptrace", "process_vm_writev", "memfd_create", "unshare", "mount",
                 "io_uring_setup", "keyctl", "bpf"):
        assert verdict(name) == seccomp.DENY, name
    if machine == "x86_64":
        assert verdict("fork") == verdict("vfork") == seccomp.DENY
        assert run_bpf(prog, 0x40000000 + 59, arch) == seccomp.DENY  # x32 execve
    assert verdict("clone", 0x11) == seccomp.DENY  # fork through clone (SIGCHLD)
    assert verdict("clone", 0x3D0F00) == seccomp.RET_ALLOW  # pthread_create's flags (CLONE_THREAD among them)
    assert verdict("clone3") == seccomp.NO_SYSCALL
    assert verdict("mmap", 0, 4096, 0x5, 0x22) == seccomp.DENY  # anonymous, executable
    assert verdict("mmap", 0, 4096, 0x7, 0x02) == seccomp.DENY  # a file, writable and executable
    assert verdict("mmap", 0, 4096, 0x5, 0x02) == seccomp.RET_ALLOW  # a library's text: read + exec of a file
    assert verdict("mmap", 0, 4096, 0x3, 0x22) == seccomp.RET_ALLOW  # ordinary memory
    assert verdict("mprotect", 0, 4096, 0x5) == seccomp.DENY
    assert verdict("mprotect", 0, 4096, 0x1) == seccomp.RET_ALLOW
    assert verdict("personality", 0x0400000) == seccomp.DENY  # READ_IMPLIES_EXEC
    assert verdict("personality", 0xFFFFFFFF) == seccomp.RET_ALLOW  # the query
    assert verdict("prctl", seccomp.PR_SET_DUMPABLE, 1) == seccomp.DENY
    assert verdict("prctl", 15) == seccomp.RET_ALLOW  # PR_SET_NAME: torch names its threads
    assert verdict("shmat", 0, 0, seccomp.SHM_EXEC) == seccomp.DENY
    assert run_bpf(prog, 0, arch) == seccomp.RET_ALLOW  # read / io_setup
    other = next(a for m, (a, _) in seccomp.ARCHES.items() if m != machine)
    assert run_bpf(prog, 0, other) == seccomp.RET_KILL_PROCESS  # another architecture's numbers
    assert run_bpf(prog, 0, 0x40000003) == seccomp.RET_KILL_PROCESS  # i386 (int 0x80 on x86-64)


def test_filter_refuses_unknown_machines(monkeypatch):
    with pytest.raises(KeyError):
        seccomp.program("riscv64")
    monkeypatch.setattr(seccomp.platform, "machine", lambda: "riscv64")
    assert seccomp.install() is False  # and nothing was installed


LIVE_PROBE = textwrap.dedent(r"""
    import ctypes, json, os, subprocess, sys, threading
    import torch
    import torch.utils.collect_env
    from tritonrl.verify.child import seccomp
    out = {"installed": seccomp.install() and seccomp.active()}
    def attempt(name, fn):
        try:
            out[name] = repr(fn())
        except BaseException as exc:
            out[name] = f"{type(exc).__name__}: {exc}"
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    thread = threading.Thread(target=lambda: out.__setitem__("thread_ran", True))
    attempt("thread", lambda: (thread.start(), thread.join()))
    attempt("torch_threads", lambda: float(torch.ones(1 << 20).sum()))
    attempt("fork", os.fork)
    attempt("system", lambda: os.system("true"))
    attempt("subprocess", lambda: subprocess.run(["true"]))
    attempt("collect_env", lambda: torch.utils.collect_env.run("true"))
    attempt("mmap_exec", lambda: libc.mmap(None, 4096, 7, 0x22, -1, 0))
    attempt("memfd", lambda: os.memfd_create("x"))
    page = libc.mmap(None, 4096, 3, 0x22, -1, 0)
    attempt("mprotect_exec", lambda: libc.mprotect(ctypes.c_void_p(page), 4096, 5))
    attempt("ptrace", lambda: libc.ptrace(16, os.getppid(), 0, 0))  # PTRACE_ATTACH
    attempt("dumpable", lambda: libc.prctl(4, 1, 0, 0, 0))
    attempt("read_implies_exec", lambda: libc.personality(0x0400000))
    print(json.dumps(out))
""")


@pytest.mark.skipif(sys.platform != "linux" or os.uname().machine not in seccomp.ARCHES, reason="Linux x86-64/AArch64")
def test_filter_live_refuses_processes_and_executable_memory():
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    done = subprocess.run([sys.executable, "-c", LIVE_PROBE], capture_output=True, text=True, env=env, timeout=120)
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["installed"] and out.get("thread_ran"), out
    assert out["torch_threads"] == repr(float(1 << 20))
    for name in ("fork", "subprocess", "collect_env", "memfd"):
        assert "Operation not permitted" in out[name], (name, out[name])
    assert out["system"] != "0"  # the shell never started
    assert out["mmap_exec"] == repr(2 ** 64 - 1)  # MAP_FAILED
    for name in ("mprotect_exec", "ptrace", "dumpable", "read_implies_exec"):
        assert out[name] == "-1", (name, out[name])


# ------------------------------------------------------------------ the environment
def test_environments_are_allow_lists():
    parent = {"AWS_SECRET_ACCESS_KEY": SECRET, "HF_TOKEN": SECRET, "PATH": "/usr/bin", "PYTHONPATH": "/src",
              "TRITON_INTERPRET": "1", "TRITONRL_TIMING_ON_CPU": "1", "CUDA_VISIBLE_DEVICES": "3", "HOME": "/root"}
    zygote = zygote_environment(parent)
    assert SECRET not in json.dumps(zygote)
    assert zygote["TRITON_INTERPRET"] == "1" and zygote["PYTHONPATH"] == "/src" and "TRITONRL_TIMING_ON_CPU" in zygote
    child = child_environment(zygote, {"CUDA_VISIBLE_DEVICES": "1"}, "/job")
    assert SECRET not in json.dumps(child)
    assert child["CUDA_VISIBLE_DEVICES"] == "1" and child["HOME"] == child["TMPDIR"] == "/job"
    assert "PYTHONPATH" not in child and "TRITONRL_TIMING_ON_CPU" not in child and child["PATH"] == "/usr/bin:/bin"


# ------------------------------------------------------------------ the view, entered for real
VIEW_PROBE = textwrap.dedent(r"""
    import errno, json, os, sys
    import torch, triton  # noqa: F401 - what the child has imported when it isolates
    from tritonrl.verify.child.isolation import isolate
    job, solutions, repo, secret, harness = sys.argv[1:6]
    os.chdir(job)
    report = isolate(job, "cpu", network=True, filesystem=True)
    def status(path, flags=os.O_RDONLY):
        try:
            os.close(os.open(path, flags))
            return "open"
        except OSError as exc:
            return errno.errorcode[exc.errno]
    out = {"report": report.to_dict(), "solutions": status(solutions), "repo": status(os.path.join(repo, "pyproject.toml")),
           "outside": status(secret), "proc_mem": status("/proc/self/mem", os.O_RDWR),
           "proc_environ": status("/proc/self/environ"), "job_write": status("written.txt", os.O_WRONLY | os.O_CREAT),
           "usr_write": status("/usr/tritonrl-probe", os.O_WRONLY | os.O_CREAT),
           "shm_write": status("/dev/shm/probe", os.O_WRONLY | os.O_CREAT),
           "harness": status(harness), "visible_root": sorted(os.listdir("/"))}
    with open("probe.json", "w") as fh:
        json.dump(out, fh)
""")


def _can_isolate() -> bool:
    return os.geteuid() == 0 or Path("/proc/sys/user/max_user_namespaces").read_text().strip() != "0"


@pytest.mark.skipif(not _can_isolate(), reason="needs root or user namespaces")
def test_view_holds_only_what_a_candidate_needs(tmp_path):
    job, secret = tmp_path / "job", tmp_path / "secret.txt"
    job.mkdir()
    secret.write_text(SECRET)
    import tritonrl.verify.child.harness as harness

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    argv = [str(job), str(SOLUTIONS / "l1_relu.py"), str(REPO), str(secret), harness.__file__]
    done = subprocess.run([sys.executable, "-c", VIEW_PROBE, *argv], capture_output=True, text=True, env=env,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads((job / "probe.json").read_text())
    report = out["report"]
    assert report["fs_isolated"] and report["readonly"] and report["noexec"], report
    assert out["solutions"] == out["repo"] == out["outside"] == "ENOENT", out
    assert out["harness"] == "open"  # the package's own modules are there
    assert out["job_write"] == "open" and out["shm_write"] == "open" and out["usr_write"] == "EROFS"
    assert "home" not in out["visible_root"] and "mnt" not in out["visible_root"], out["visible_root"]
    if os.geteuid() == 0:  # root became nobody: its /proc/self/mem belongs to root now
        assert report["uid"] == 65534 and report["unprivileged"]
        assert out["proc_mem"] == out["proc_environ"] == "EACCES"


def test_view_binds_no_project_tree_whatever_the_working_directory():
    """Worked out in a process started in the repository's root (as the zygote is under pytest): the package's
    imported modules only, never the root, ``src`` or ``tasks/`` (a frozen module's ``__file__`` once made the
    working directory a Python tree)."""
    probe = ("import json, torch, triton, tritonrl.verify.child.harness\n"
             "from tritonrl.verify.child.view import base_plan\n"
             "print(json.dumps([b.target for b in base_plan('/tmp/tritonrl-jobs-probe').binds]))")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, cwd=REPO,
                          timeout=120, check=True)
    targets = [Path(t).resolve() for t in json.loads(done.stdout.strip().splitlines()[-1])]
    assert REPO not in targets and PACKAGE.parent not in targets and PACKAGE not in targets, targets
    pieces = [t.relative_to(PACKAGE).parts for t in targets if PACKAGE in t.parents]
    assert pieces and not any("tasks" in parts for parts in pieces), pieces


# ------------------------------------------------------------------ the fixtures, judged
NATIVE_MODULE = r"""
#include <Python.h>
static PyObject* answer(PyObject* self, PyObject* args) { return PyLong_FromLong(42); }
static PyMethodDef METHODS[] = {{"answer", answer, METH_NOARGS, ""}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef DEF = {PyModuleDef_HEAD_INIT, "native_answer", NULL, -1, METHODS};
PyMODINIT_FUNC PyInit_native_answer(void) { return PyModule_Create(&DEF); }
"""


def _native_module() -> str | None:
    """A Python extension module, built here, as base64 (None without a C compiler or Python's headers)."""
    import sysconfig
    import tempfile

    cc, include = shutil.which("cc") or shutil.which("gcc"), sysconfig.get_paths()["include"]
    if cc is None or not os.path.exists(os.path.join(include, "Python.h")):
        return None
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "answer.c").write_text(NATIVE_MODULE)
        subprocess.run([cc, "-shared", "-fPIC", f"-I{include}", "-o", f"{tmp}/answer.so", f"{tmp}/answer.c"],
                       check=True)
        return base64.b64encode((Path(tmp) / "answer.so").read_bytes()).decode()


def fixture_code(path: Path, blob: str | None) -> str | None:
    code = path.read_text()
    if "__SO_BASE64__" in code:
        if blob is None:
            return None
        code = code.replace("__SO_BASE64__", blob)
    return code.replace("__SOLUTIONS__", str(SOLUTIONS)).replace("__REPO__", str(REPO))


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory):
    """{fixture name: result}, all judged in one batch by a verifier whose zygote started with a fake secret in its
    caller's environment; plus the honest relu's verdict from the same verifier."""
    saved = os.environ.get("AWS_SECRET_ACCESS_KEY")
    os.environ["AWS_SECRET_ACCESS_KEY"] = SECRET
    blob = _native_module()
    config = VerifyConfig(device="auto" if CUDA else "cpu", timeout_s=45 if CUDA else 30, workers=2,
                          static_checks=False, cache_dir=str(tmp_path_factory.mktemp("sandbox-cache")))
    try:
        with Verifier(config) as verifier:
            out = {}
            for path in FIXTURES:
                code = fixture_code(path, blob)
                out[path.name] = None if code is None else verifier.verify(TASKS[header(path, "task")], code=code)
            out["honest"] = verifier.verify(TASKS["relu"], code=GOOD_RELU)
        return out
    finally:
        os.environ.pop("AWS_SECRET_ACCESS_KEY") if saved is None else os.environ.update(AWS_SECRET_ACCESS_KEY=saved)


@pytest.mark.parametrize("fixture", FIXTURES, ids=lambda p: p.stem)
def test_sandbox_fixture_is_refused(fixture, verdicts):
    result = verdicts[fixture.name]
    if result is None:
        pytest.skip("needs a C compiler and Python's headers to build the module")
    described = f"{fixture.name}: stage={result.stage} flags={result.flags} error={result.error!r}"
    assert not result.correct and result.stage is Stage.COMPILE, described
    assert header(fixture, "error") in (result.error or ""), described
    assert SECRET not in json.dumps(result.to_dict()), described
    assert result.timing.get("sandbox") == {name: True for name in PROTECTIONS}, described


def test_honest_kernel_still_judged_correct(verdicts):
    result = verdicts["honest"]
    assert result.correct, (result.flags, result.error)
    assert all(result.timing["sandbox"].values()) and "sandbox_incomplete" not in result.flags


# ------------------------------------------------------------------ strict and best effort
def test_missing_protection_strict_is_no_verdict_best_effort_is_flagged():
    report = IsolationReport(**{f: True for fields in PROTECTIONS.values() for f in fields})
    report.seccomp = False
    assert missing_protections(report.to_dict(), list(PROTECTIONS)) == ["processes", "native_code", "proc_mem"]
    for mode, flags in (("strict", ["sandbox_unavailable", "verifier_error"]), ("best_effort", ["sandbox_incomplete"])):
        verifier = Verifier(VerifyConfig(device="cpu", sandbox=mode))
        result = VerifyResult(Stage.COMPILE, flags=["sandbox_unavailable"] if mode == "strict" else [])
        verifier._apply_sandbox(result, report.to_dict())
        assert result.flags == flags and result.timing["sandbox"]["processes"] is False


def test_switched_off_protections_are_not_required():
    verifier = Verifier(VerifyConfig(device="cpu", fs_isolation=False, network_isolation=False))
    assert set(verifier._required_protections()) == set(PROTECTIONS) - {"filesystem", "network"}


# ------------------------------------------------------------------ on a GPU (TRITONRL_TEST_CUDA=1 pytest -m gpu)
GPU_SOLUTIONS = ("l1_relu", "l1_softmax", "l1_matmul", "l1_layernorm", "l2_gemm_bias_relu", "l2_conv_relu_bias",
                 "l1_transpose", "l2_swiglu")


@pytest.mark.gpu
def test_gpu_bundled_solutions_pass_in_the_sandbox(tmp_path):
    """On a GPU the child compiles every kernel through its toolchain helper (ptxas, the C launcher) and loads the
    judge's driver module from the read-only template: honest kernels are judged as before, every protection on."""
    from tritonrl.tasks import get_task

    names = [n for n in GPU_SOLUTIONS if (SOLUTIONS / f"{n}.py").exists()]
    with Verifier(VerifyConfig(device="cuda", timeout_s=60, workers=2, cache_dir=str(tmp_path))) as verifier:
        results = {n: verifier.verify(get_task(n), code=(SOLUTIONS / f"{n}.py").read_text()) for n in names}
    for name, result in results.items():
        assert result.correct and result.speedup is not None, (name, result.flags, result.error)
        assert result.timing["sandbox"] == {p: True for p in PROTECTIONS}, (name, result.timing.get("isolation"))
