"""The parent's end of each judge process: sessions out, verdict facts back.

    judge = JudgeClient(zygote, gpu="0", spec={...}, env={"CUDA_VISIBLE_DEVICES": "0"}, salt=secret)
    key = judge.open(message, child_socket)        # the child starts while the parent plans the trials
    facts = judge.finish(key, plan, wait_s)        # raises JudgeDied if the judge ends or hangs meanwhile

A judge (``tritonrl.verify.judge.server``) is forked by the zygote with one end of a socket pair; this holds the
other. Sessions are numbered; a reader thread routes the judge's replies to the threads waiting for them.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from typing import Any

from tritonrl.verify.parent.zygote_client import ZygoteClient
from tritonrl.verify.shared import wire

log = logging.getLogger(__name__)

JUDGE_START_S = 300.0    # a judge's start (CUDA, imports) at most


class JudgeDied(RuntimeError):
    """The judge process ended (or stopped answering) with this session in flight."""


class JudgeClient:
    """The parent's end of one judge: sessions out, facts back (a reader thread routes them by id)."""

    def __init__(self, zygote: ZygoteClient, gpu: str | None, spec: dict[str, Any], env: dict[str, str],
                 salt: str = "") -> None:
        began = time.monotonic()
        mine, theirs = socket.socketpair()
        self.process = zygote.submit("judge", "", spec, env, {}, theirs)
        # The salt (the trials' input seeds: ``judge.references``) goes to the judge alone, after its fork: sent with
        # the job it would pass through the zygote, whose memory every candidate's child is forked from.
        wire.send(mine, {"op": "secret", "salt": salt})
        self.sock = mine
        self.gpu = gpu
        self._next = 0
        self._results: dict[int, dict] = {}
        self._ready: set[int] = set()  # sessions whose child has started CUDA
        self._cond = threading.Condition()
        self._send_lock = threading.Lock()
        self.alive = True
        try:
            ready, _ = wire.recv(mine, timeout_s=JUDGE_START_S)
        except (wire.Closed, wire.TimedOut, wire.BadMessage) as exc:
            self.process.finish()
            raise RuntimeError(f"the verifier's judge failed to start ({type(exc).__name__})") from None
        self.gpu_name = ready.get("gpu")
        self.startup = {"ready": round(time.monotonic() - began, 3), "ready_at": time.monotonic(),
                        **(ready.get("startup_s") or {})}
        threading.Thread(target=self._read, daemon=True).start()
        log.info("verifier judge for %s (%s) started in %.2f s", gpu, self.gpu_name, time.monotonic() - began)

    def _read(self) -> None:
        try:
            while True:
                message, _ = wire.recv(self.sock)
                with self._cond:
                    if message.get("ready") is True:  # a session's child started CUDA
                        self._ready.add(message.get("id"))
                    else:
                        key = message.get("id") if "facts" in message else "stats"
                        self._results[key] = message.get("facts") if "facts" in message else message.get("stats")
                    self._cond.notify_all()
        except (wire.Closed, wire.BadMessage, OSError):
            pass
        finally:
            with self._cond:
                self.alive = False
                self._cond.notify_all()

    def open(self, message: dict[str, Any], child_end: socket.socket) -> int:
        """Open a session with the socket to its child (closed here once sent): the judge starts the child (its
        hello, its turn at CUDA) and then waits for the trials (``finish``). Its key."""
        with self._send_lock:
            self._next += 1
            key = self._next
            try:
                wire.send(self.sock, {**message, "op": "session", "id": key}, fds=[child_end.fileno()])
            except OSError as exc:
                raise JudgeDied(f"the judge is gone ({exc})") from None
            finally:
                child_end.close()
        return key

    def finish(self, key: int, plan: dict[str, Any] | None, wait_s: float) -> dict[str, Any]:
        """Send session ``key`` its trials and timing (``plan``; None ends it unjudged) and wait for its facts.
        Raises ``JudgeDied`` if the judge ends or hangs meanwhile."""
        message = {"op": "plan", "id": key, **(plan if plan is not None else {"cancel": True})}
        with self._send_lock:
            try:
                wire.send(self.sock, message)
            except OSError as exc:
                raise JudgeDied(f"the judge is gone ({exc})") from None
        with self._cond:
            if not self._cond.wait_for(lambda: key in self._results or not self.alive, timeout=wait_s):
                self.alive = False
                raise JudgeDied(f"the judge did not answer within {wait_s:g} s")
            if key not in self._results:
                raise JudgeDied("the judge process died")
            self._ready.discard(key)
            return self._results.pop(key)

    def ended(self, key: int) -> bool:
        """Whether session ``key`` has ended before its plan (its child failed to start, or died waiting)."""
        with self._cond:
            return key in self._results

    def discard(self, key: int) -> None:
        """Forget session ``key``'s facts (a child started ahead that ended before it had a candidate)."""
        with self._cond:
            self._results.pop(key, None)
            self._ready.discard(key)

    def wait_ready(self, key: int, timeout_s: float) -> bool:
        """Whether session ``key``'s child has started CUDA (the judge says so as it happens), within ``timeout_s``."""
        with self._cond:
            return self._cond.wait_for(lambda: key in self._ready or key in self._results or not self.alive,
                                       timeout=timeout_s) and key in self._ready

    def stats(self, wait_s: float = 30.0) -> dict[str, Any]:
        with self._send_lock:
            wire.send(self.sock, {"op": "stats"})
        with self._cond:
            self._cond.wait_for(lambda: "stats" in self._results or not self.alive, timeout=wait_s)
            return self._results.pop("stats", None) or {}

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass
        self.process.finish(keep=True)
