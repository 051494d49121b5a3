"""The parent side of the sandbox: a client of the zygote, and one running child seen from outside.

``Zygote`` starts ``python -m tritonrl.verify.zygote`` (torch and Triton imported once, CUDA never touched)
and asks it to fork a child per job; a reader thread routes its replies. ``Child`` is one forked job: its
private workdir, its step files, the timeout and the kill, which takes the child's whole process group
(the child called ``setsid``), so a hang or anything it spawned is gone. Not a security boundary: see
``docs/verifier.md``, "Trust boundary and sandbox".
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from typing import Any

from tritonrl.verify.protocol import Signer, digest, new_secret, verdict_name

POLL_S = 0.005
START_TIMEOUT_S = 300.0

log = logging.getLogger(__name__)


class VerifierClosed(RuntimeError):
    """A job asked of a verifier already closed (a batch cut short by its caller): not a failure to log."""


@dataclass
class Exit:
    code: int
    signal: int

    def describe(self) -> str:
        if self.signal:
            name = signal.Signals(self.signal).name if self.signal in signal.Signals._value2member_map_ else ""
            return f"killed by signal {self.signal} {name}".strip()
        return f"exited with status {self.code}"


class Zygote:
    """One warm fork server; ``submit`` is thread-safe."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self._lock = threading.Lock()
        self._next_id = 0
        self._pids: dict[int, int] = {}
        self._exits: dict[int, Exit] = {}
        self._cond = threading.Condition()
        self._proc: subprocess.Popen | None = None
        self._closed = False

    def _start(self) -> None:
        env = {**os.environ, **self.env}
        self._proc = subprocess.Popen([sys.executable, "-m", "tritonrl.verify.zygote"], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, env=env, start_new_session=True)
        ready = self._proc.stdout.readline()
        if not ready:
            raise RuntimeError("the verifier's zygote process failed to start")
        threading.Thread(target=self._read, args=(self._proc,), daemon=True).start()

    def _read(self, proc: subprocess.Popen) -> None:
        try:
            for line in proc.stdout:
                message = json.loads(line)
                with self._cond:
                    if "pid" in message:
                        self._pids[message["id"]] = message["pid"]
                    elif "exit" in message:
                        self._exits[message["id"]] = Exit(message["exit"], message["signal"])
                    self._cond.notify_all()
        except Exception:  # noqa: BLE001 - an unreadable message: no job's exit could be told any more
            log.exception("the verifier's zygote sent an unreadable message; restarting it")
            proc.kill()  # the next job starts a new zygote
            proc.wait()
        finally:
            with self._cond:  # the zygote died: every job still running is treated as crashed
                for job_id in list(self._pids):
                    self._exits.setdefault(job_id, Exit(-1, signal.SIGKILL))
                self._cond.notify_all()

    def submit(self, kind: str, workdir: str, spec: dict[str, Any], env: dict[str, str], limits: dict) -> Child:
        """Fork a child for this job; ``spec`` travels in the message, with a fresh secret for its records."""
        spec = {**spec, "secret": new_secret()}
        with self._lock:
            if self._closed:  # a worker thread still running after close() must not start a new zygote
                raise VerifierClosed("the verifier was closed")
            if self._proc is None or self._proc.poll() is not None:
                self._start()
            self._next_id += 1
            job_id = self._next_id
            message = {"id": job_id, "kind": kind, "workdir": workdir, "spec": spec, "env": env,
                       "limits": limits}
            self._proc.stdin.write((json.dumps(message) + "\n").encode())
            self._proc.stdin.flush()
        with self._cond:
            if not self._cond.wait_for(lambda: job_id in self._pids, timeout=START_TIMEOUT_S):
                raise RuntimeError("the verifier's zygote did not fork a child")
            pid = self._pids[job_id]
        return Child(self, job_id, pid, workdir, Signer(spec["secret"]))

    def exit_of(self, job_id: int) -> Exit | None:
        with self._cond:
            return self._exits.get(job_id)

    def forget(self, job_id: int) -> None:
        with self._cond:
            self._pids.pop(job_id, None)
            self._exits.pop(job_id, None)

    def close(self) -> None:
        with self._lock:
            self._closed = True
        if self._proc and self._proc.poll() is None:
            self._proc.stdin.close()  # the zygote kills its children's groups and exits
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
        self._proc = None


class Child:
    """One forked job: wait for its signed step records, answer signed verdicts, kill its process group."""

    def __init__(self, zygote: Zygote, job_id: int, pid: int, workdir: str, signer: Signer) -> None:
        self.zygote, self.job_id, self.pid, self.workdir = zygote, job_id, pid, workdir
        self._signer = signer

    def path(self, name: str) -> str:
        return os.path.join(self.workdir, name)

    def wait_for(self, name: str, deadline: float) -> str:
        """"ok" when the file exists, "exit" when the child ended without it, "timeout" past the deadline."""
        path = self.path(name)
        while True:
            if os.path.exists(path):
                return "ok"
            if self.zygote.exit_of(self.job_id) is not None:
                return "ok" if os.path.exists(path) else "exit"
            if time.monotonic() > deadline:
                return "timeout"
            time.sleep(POLL_S)

    def verdict(self, name: str, go: bool = True) -> None:
        """Answer the child waiting for ``verdict_<name>`` (a trial's ``NN``, ``ref``, ``gate_<name>``)."""
        self._signer.write(self.workdir, verdict_name(name), {"go": go})

    def read_json(self, name: str) -> dict[str, Any] | None:
        """The child's signed record ``name``; None when missing, unreadable or not signed by the harness."""
        return self._signer.read(self.workdir, name)

    def forged(self, name: str) -> bool:
        """A file named like a record exists but is not signed with this child's secret."""
        return os.path.exists(self.path(name)) and self.read_json(name) is None

    def read_payload(self, name: str, expected_digest: object) -> bytearray | None:
        """The bytes of a payload file, only if they are the ones its signed record names (a ``bytearray``: the
        tensors decoded from it share its memory, ``protocol.tensors_from_bytes``)."""
        if not isinstance(expected_digest, str):
            return None
        try:
            with open(self.path(name), "rb") as fh:
                data = bytearray(os.fstat(fh.fileno()).st_size)
                if fh.readinto(data) != len(data) or fh.read(1):
                    return None  # changed while read
        except OSError:
            return None
        return data if digest(data) == expected_digest else None

    def exit(self) -> Exit | None:
        return self.zygote.exit_of(self.job_id)

    def kill(self) -> None:
        """SIGKILL the child's whole process group (and the child itself, had it not yet called setsid).

        Only a child not yet reaped is killed by pid; after it exited its pid may belong to someone else.
        """
        killers = [os.killpg] if self.exit() is not None else [os.killpg, os.kill]
        for killer in killers:
            try:
                killer(self.pid, signal.SIGKILL)
            except OSError:
                pass

    def finish(self, keep: bool = False) -> None:
        self.kill()
        deadline = time.monotonic() + 5
        while self.exit() is None and time.monotonic() < deadline:
            time.sleep(POLL_S)
        self.zygote.forget(self.job_id)
        if not keep:
            shutil.rmtree(self.workdir, ignore_errors=True)


def jobs_root() -> str:
    """The one directory holding every child's working directory: hidden from candidates as a whole."""
    root = os.path.join(tempfile.gettempdir(), f"tritonrl-jobs-{os.getuid()}")
    os.makedirs(root, mode=0o700, exist_ok=True)
    return root


def make_workdir(root: str | None = None) -> str:
    """A private temp dir (mode 0700) for one child: its cwd, code, step files and stdio."""
    return tempfile.mkdtemp(prefix="job-", dir=root or jobs_root())
