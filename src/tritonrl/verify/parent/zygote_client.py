"""The parent side of the sandbox: a client of the zygote, and one forked process seen from outside.

``ZygoteClient`` starts ``python -m tritonrl.verify.zygote`` (torch and Triton imported once, CUDA never touched)
and asks it to fork a judge per device and a child per candidate, each with the socket it will talk on; a reader
thread routes its replies (pids, exits). ``Forked`` is one such process: its private workdir, its exit, and the
kill, which takes its whole process group (it called ``setsid``), so a hang or anything it spawned is gone. Not
a security boundary: see ``docs/verifier.md``, "Trust boundary and sandbox".
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from typing import Any

from tritonrl.verify.shared import wire
from tritonrl.verify.shared.directories import jobs_root
from tritonrl.verify.shared.environment import zygote_environment

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


class ZygoteClient:
    """One warm fork server; ``submit`` is thread-safe."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self._lock = threading.Lock()
        self._next_id = 0
        self._pids: dict[int, int] = {}
        self._exits: dict[int, Exit] = {}
        self._cond = threading.Condition()
        self._proc: subprocess.Popen | None = None
        self._sock: socket.socket | None = None
        self._closed = False
        self.startup: dict[str, float] = {}  # seconds: the whole start, the zygote's imports, its warm-ups
        self._warmed = False

    def _start(self) -> None:
        began = time.monotonic()
        self._warmed = False
        env = {**zygote_environment(os.environ), **self.env}  # never the caller's credentials
        mine, theirs = socket.socketpair()
        self._proc = subprocess.Popen([sys.executable, "-m", "tritonrl.verify.zygote", "--fd", str(theirs.fileno())],
                                      pass_fds=[theirs.fileno()], env=env, start_new_session=True)
        theirs.close()
        try:
            ready, _ = wire.recv(mine, timeout_s=START_TIMEOUT_S)
        except (wire.Closed, wire.TimedOut, wire.BadMessage):
            ready = {}
        if not ready.get("ready"):
            self._proc.kill()
            raise RuntimeError("the verifier's zygote process failed to start")
        self._sock = mine
        self.startup = {"ready": round(time.monotonic() - began, 3), "ready_at": time.monotonic(),
                        **(ready.get("startup_s") or {})}
        threading.Thread(target=self._read, args=(self._proc, mine), daemon=True).start()
        log.info("verifier zygote started in %.2f s", time.monotonic() - began)

    def _read(self, proc: subprocess.Popen, sock: socket.socket) -> None:
        try:
            while True:
                message, _ = wire.recv(sock)
                with self._cond:
                    if "pid" in message:
                        self._pids[message["id"]] = message["pid"]
                    elif message.get("warmed"):
                        self.startup.update(message.get("startup_s") or {})
                        self._warmed = True
                    elif "exit" in message:
                        self._exits[message["id"]] = Exit(message["exit"], message["signal"])
                    self._cond.notify_all()
        except wire.Closed:
            pass
        except Exception:  # noqa: BLE001 - an unreadable message: no job's exit could be told any more
            log.exception("the verifier's zygote sent an unreadable message; restarting it")
            proc.kill()  # the next job starts a new zygote
        finally:
            proc.kill()
            proc.wait()
            with self._cond:  # the zygote died: every job still running is treated as crashed
                for job_id in list(self._pids):
                    self._exits.setdefault(job_id, Exit(-1, signal.SIGKILL))
                self._cond.notify_all()

    def submit(self, kind: str, workdir: str, spec: dict[str, Any], env: dict[str, str], limits: dict,
               sock: socket.socket) -> Forked:
        """Fork a judge or a candidate child for this job, handing it ``sock`` (closed here once sent)."""
        with self._lock:
            if self._closed:  # a worker thread still running after close() must not start a new zygote
                raise VerifierClosed("the verifier was closed")
            if self._proc is None or self._proc.poll() is not None:
                self._start()
            self._next_id += 1
            job_id = self._next_id
            message = {"id": job_id, "kind": kind, "workdir": workdir, "spec": spec, "env": env, "limits": limits}
            try:
                wire.send(self._sock, message, fds=[sock.fileno()])
            finally:
                sock.close()
        with self._cond:  # close() wakes it: a fork asked for as the verifier closes is not waited for
            self._cond.wait_for(lambda: job_id in self._pids or job_id in self._exits or self._closed,
                                timeout=START_TIMEOUT_S)
            if job_id not in self._pids:
                if self._closed:
                    raise VerifierClosed("the verifier was closed")
                raise RuntimeError("the verifier's zygote did not fork a process")
            pid = self._pids[job_id]
        return Forked(self, job_id, pid, workdir)

    def wait_warm(self, timeout_s: float) -> bool:
        """Whether the zygote finished the candidates' warm-ups (after its first fork) within ``timeout_s``."""
        with self._cond:
            return self._cond.wait_for(lambda: self._warmed, timeout=timeout_s)

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
        with self._cond:
            self._cond.notify_all()
        if self._proc and self._proc.poll() is None:
            try:
                self._sock.shutdown(socket.SHUT_WR)  # the zygote kills its forks' groups and exits
            except OSError:
                pass
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
        self._proc = None


class Forked:
    """One forked job (a judge or a candidate child): its exit, its files, the kill of its process group."""

    def __init__(self, zygote: ZygoteClient, job_id: int, pid: int, workdir: str) -> None:
        self.zygote, self.job_id, self.pid, self.workdir = zygote, job_id, pid, workdir

    def path(self, name: str) -> str:
        return os.path.join(self.workdir, name)

    def exit(self) -> Exit | None:
        return self.zygote.exit_of(self.job_id)

    def wait_exit(self, timeout_s: float) -> Exit | None:
        deadline = time.monotonic() + timeout_s
        while self.exit() is None and time.monotonic() < deadline:
            time.sleep(POLL_S)
        return self.exit()

    def kill(self) -> None:
        """SIGKILL the process group (and the process itself, had it not yet called setsid).

        Only a process not yet reaped is killed by pid; after it exited its pid may belong to someone else.
        """
        killers = [os.killpg] if self.exit() is not None else [os.killpg, os.kill]
        for killer in killers:
            try:
                killer(self.pid, signal.SIGKILL)
            except OSError:
                pass

    def finish(self, keep: bool = False) -> None:
        self.kill()
        self.wait_exit(5)
        self.zygote.forget(self.job_id)
        if not keep and self.workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def stderr_tail(self, chars: int = 240, limit: int = 1 << 20) -> str:
        """The last line the process wrote to stderr; never through a link the candidate put in its place (the
        parent reads with its own rights: a symlink to any file would leak that file into the verdict)."""
        try:
            fd = os.open(self.path("stderr.txt"), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            return ""
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return ""
            with os.fdopen(fd, "rb", closefd=False) as fh:
                fh.seek(max(0, os.fstat(fd).st_size - limit))
                text = fh.read(limit).decode(errors="replace")
        except OSError:
            return ""
        finally:
            os.close(fd)
        lines = [line for line in text.strip().splitlines() if line.strip()]
        return lines[-1][-chars:] if lines else ""


def make_workdir(root: str | None = None) -> str:
    """A private temp dir (mode 0700) for one child: its cwd, code, step files and stdio."""
    return tempfile.mkdtemp(prefix="job-", dir=root or jobs_root())
