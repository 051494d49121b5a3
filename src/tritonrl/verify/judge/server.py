"""The judge process: one per GPU (one on a CPU), trusted, never imports candidate code.

Forked by the zygote for the parent (``tritonrl.verify.parent.verifier``), with the parent's socket. It holds what
decides verdicts: the references on its device (``references``), the timing of the reference ``Model``
(``timings``), the per-GPU lock that keeps a timed candidate alone on the GPU, and the comparison. For each
candidate the parent sends a session with the socket of that candidate's child; a thread runs it
(``session.Session``) and sends back the verdict's facts. Messages (``tritonrl.verify.shared.wire``):

  parent -> judge   {"op": "session", "id": 3, "seal": ..., "config": {...}} + the child's socket (the child
                    starts) | {"op": "plan", "id": 3, "trials": [...], "timing": {...}} (or "cancel") | {"op": "stats"}
  judge -> parent   {"op": "ready", "gpu": name}  (once)  |  {"id": 3, "facts": {...}}  |  {"stats": {...}}

Several sessions run at once (``workers_per_gpu``); their GPU work (references, comparisons, the children's
trials) shares the GPU, and a timing run has it to itself (``gpu_lock``). At end of input the judge exits.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import socket
import threading
import traceback
from typing import Any

import torch

from tritonrl.verify.judge.gpu_lock import CrossProcessGpuLease, GpuFileLock, GpuLease, RWLock
from tritonrl.verify.judge.launchers import LauncherSeed
from tritonrl.verify.judge.reference_timings import TimingStore
from tritonrl.verify.judge.references import ReferenceStore
from tritonrl.verify.judge.session import Session
from tritonrl.verify.judge.timing_run import PrefetchBudget
from tritonrl.verify.shared import wire
from tritonrl.verify.shared.stopwatch import Stopwatch

log = logging.getLogger(__name__)


class Judge:
    """The judge's shared state: references, reference timings, the GPU's lock; sessions borrow them."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.spec = spec
        self.device = spec["device"]
        self.startup = Stopwatch()  # seconds per step of the start (``JudgeClient.startup``)
        if self.device == "cuda":
            with self.startup("cuda"):
                torch.cuda.set_device(0)
                torch.empty(1, device="cuda")  # CUDA initialised once, before any session
            self.device = "cuda:0"
        self.gpu_name = torch.cuda.get_device_name() if self.device.startswith("cuda") else "cpu"
        self.launchers = None  # Triton's launchers, built here for the children (``judge/launchers.py``)
        if self.device.startswith("cuda") and spec.get("triton_template"):
            with self.startup("driver_utils"):
                build_driver_utils(spec["triton_template"])
            if spec.get("launchers", True):
                self.launchers = launcher_seed(spec["triton_template"])
        self.store = ReferenceStore(self.device, bool(spec.get("randomize", True)),
                                    int(spec.get("reference_bytes", 8 << 30)), str(spec["salt"]))
        self.timings = TimingStore(spec.get("cache_dir"), self.gpu_name)
        self.prefetch_budget = PrefetchBudget.for_device(self.device, spec.get("prefetch_bytes"))
        self.lock = RWLock()
        # Children starting CUDA at once (sessions take turns, first come first served). Forked children making
        # their contexts on an H100 (benchmarks/probes/cuda_start_probe.py), first and last ready: 36 at once 4.3 / 8.0 s;
        # 4 at a time 0.6 / 7.1 s; 8 at a time 1.0 / 6.3 s. A few at a time get the first candidates to their trials,
        # and the GPU, sooner, and the last no later.
        self.cuda_starts = (threading.Semaphore(int(spec.get("cuda_starts", 8))) if self.device.startswith("cuda")
                            else contextlib.nullcontext())
        self.file_lock = GpuFileLock(str(spec.get("gpu") or "cpu"), spec.get("lock_dir")) \
            if self.device.startswith("cuda") else None
        self._send_lock = threading.Lock()

    def lease(self) -> GpuLease:
        """A thread's hold on this judge's GPU (shared with the other sessions, or alone: ``gpu_lock``)."""
        gpu = self.file_lock
        return CrossProcessGpuLease(gpu.gpu, self.lock, gpu) if gpu is not None else GpuLease("cpu", self.lock)

    def send(self, sock: socket.socket, message: dict) -> None:
        with self._send_lock:
            wire.send(sock, message)


def build_driver_utils(template: str) -> None:
    """Build Triton's CUDA driver module (``cuda_utils``, a C extension compiled at a process's first launch) into
    ``template``, a Triton cache each candidate's child sees read-only (and loads before its candidate is imported):
    built here, by trusted code, once, instead of by gcc in every child (0.5 s each on an H100). Nothing a child
    builds is ever shared."""
    import os

    saved = os.environ.get("TRITON_CACHE_DIR")
    os.environ["TRITON_CACHE_DIR"] = template
    try:
        from triton.runtime import driver

        driver.active.utils  # noqa: B018 - building it is the point
    except Exception as exc:  # noqa: BLE001 - an optimisation: children build their own
        log.warning("Triton driver utilities not prebuilt: %s", exc)
    finally:
        os.environ.pop("TRITON_CACHE_DIR") if saved is None else os.environ.update(TRITON_CACHE_DIR=saved)


def launcher_seed(template: str) -> LauncherSeed | None:
    """The launchers' seed in ``template``, where this Triton builds a launcher per signature (3.6: not 3.9)."""
    try:
        from triton.backends.nvidia import driver

        return LauncherSeed(template) if hasattr(driver, "make_launcher") else None
    except Exception as exc:  # noqa: BLE001 - an optimisation: children build their own
        log.warning("Triton's launchers not built by the judge: %s", exc)
        return None


def serve(sock: socket.socket, spec: dict[str, Any]) -> None:
    """The judge's life: take the salt, set up, say ready, run each session in a thread, until the parent closes its
    end. The salt comes over this socket, never with ``spec`` (which passed through the zygote)."""
    try:
        secret, _ = wire.recv(sock)
    except wire.Closed:
        return  # its verifier was closed while the judge was starting (a Ctrl-C): nobody to judge for
    judge = Judge({**spec, "salt": str(secret.get("salt", ""))})
    judge.send(sock, {"op": "ready", "gpu": judge.gpu_name, "startup_s": judge.startup.seconds()})
    threads: list[threading.Thread] = []
    plans: dict[Any, queue.Queue] = {}  # session id -> where its plan goes, until it comes
    while True:
        try:
            message, fds = wire.recv(sock)
        except wire.Closed:
            break
        op = message.get("op")
        if op == "session" and fds:
            child = socket.socket(fileno=fds[0])
            box = plans[message.get("id")] = queue.Queue(maxsize=1)
            thread = threading.Thread(target=_run_session, args=(judge, sock, message, child, box), daemon=True)
            thread.start()
            threads = [t for t in threads if t.is_alive()] + [thread]
        elif op == "plan":
            box = plans.pop(message.get("id"), None)
            if box is not None:
                box.put(message)
        elif op == "stats":
            judge.send(sock, {"stats": {**judge.store.stats, **judge.timings.stats}})
        elif op == "bye":
            break
    for box in plans.values():  # the parent is gone: sessions still waiting for a plan end
        box.put(None)
    judge.timings.close()


def _say_ready(judge: Judge, sock: socket.socket, key: Any) -> None:
    """The parent is told when a session's child has started CUDA (``Verifier.start(wait=True)`` waits for the
    children it started ahead of their candidates)."""
    try:
        judge.send(sock, {"id": key, "ready": True})
    except OSError:
        pass  # the parent is gone


def _run_session(judge: Judge, sock: socket.socket, message: dict, child: socket.socket, box: queue.Queue) -> None:
    try:
        facts = Session(judge, message, child, box, on_ready=lambda: _say_ready(judge, sock, message.get("id"))).run()
    except Exception as exc:  # noqa: BLE001 - the verifier's own failure: this item's verdict, with its traceback
        facts = {"verifier_error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()[-4000:]}
    finally:
        child.close()
    try:
        judge.send(sock, {"id": message.get("id"), "facts": facts})
    except OSError:
        pass  # the parent is gone
