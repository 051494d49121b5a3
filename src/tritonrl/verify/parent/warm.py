"""Candidate children started ahead of their candidates: forked, isolated, CUDA started, waiting for code.

    pool = WarmPool()
    pool.put(started)                  # a child and its judge's session, opened before any candidate is known
    started = pool.take(gpu, judge)    # the oldest one of this GPU's current judge, or None
    pool.wait_ready(timeout_s)         # until every child in the pool has started CUDA (or the time is up)

A candidate's child costs seconds before its candidate runs: the fork, the sandbox, a CUDA context (1-3 s each on
a loaded H200, a few at a time: docs/verifier.md, "A candidate's start"). Nothing of that depends on the candidate,
so the verifier can start them ahead (``VerifyConfig.warm_children``, off by default: each waiting child keeps a CUDA
context on its GPU): one per place of each GPU whenever none of
the GPU's places judges a candidate (at ``Verifier.start``, and when a batch ends: an RL step's batch finds its
children ready), never while a batch runs (they would contend with its children for the host and for the GPU's CUDA
starts), unless ``VerifyConfig.warm_spares``: then each child a candidate takes is replaced at once, while the
batch runs. A started child runs only the harness's trusted code until the parent has written the candidate's file
into its job directory and sent its judge the plan; one child still judges one candidate.
"""

from __future__ import annotations

import os
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Any

from tritonrl.verify.shared.wire import CODE_FILE

CANCEL_WAIT_S = 30.0  # for the judge to end the session of a child that died waiting


@dataclass
class Started:
    """A candidate child and its session with its GPU's judge, before its candidate."""

    gpu: str
    workdir: str
    child: Any          # zygote_client.Forked
    judge: Any          # judge_client.JudgeClient
    key: int            # the judge's session id
    asked: float        # monotonic s: the fork asked for, and done (diagnosis: ``fork_span``)
    forked: float
    warm: bool = False  # started ahead of its candidate


def write_code(workdir: str, code: str) -> None:
    """The candidate's file in its child's job directory (a new file: never through a name already there)."""
    fd = os.open(os.path.join(workdir, CODE_FILE), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "w") as fh:
        fh.write(code)


class WarmPool:
    """Started children waiting for candidates, per GPU, oldest first."""

    def __init__(self) -> None:
        self._by_gpu: dict[str, deque[Started]] = {}
        self._guard = threading.Lock()

    def put(self, started: Started) -> None:
        started.warm = True
        with self._guard:
            self._by_gpu.setdefault(started.gpu, deque()).append(started)

    def count(self, gpu: str) -> int:
        with self._guard:
            return len(self._by_gpu.get(gpu, ()))

    def take(self, gpu: str, judge: Any) -> Started | None:
        """The oldest started child of ``gpu`` whose session is with ``judge`` (the GPU's judge now, alive) and
        still open, its child alive; those of a judge that is gone, and those whose child failed to start or died
        waiting (that is no candidate's verdict), are finished on the way."""
        if judge is None:  # the GPU's judge is starting: what is here is its own, or soon will be
            return None
        while True:
            with self._guard:
                queue = self._by_gpu.get(gpu)
                started = queue.popleft() if queue else None
            if started is None:
                return None
            if started.judge is judge and judge.alive:
                if judge.ended(started.key):  # its child failed to start: that is no candidate's verdict
                    judge.discard(started.key)
                elif started.child.exit() is not None:  # it died waiting: its session ends unjudged
                    try:
                        judge.finish(started.key, None, CANCEL_WAIT_S)
                    except Exception:  # noqa: BLE001 - the judge's own trouble surfaces with the next candidate
                        pass
                else:
                    return started
            started.child.finish()

    def drain(self) -> list[Started]:
        with self._guard:
            every = [s for queue in self._by_gpu.values() for s in queue]
            self._by_gpu.clear()
        return every

    def wait_ready(self, timeout_s: float) -> bool:
        """Whether every child now in the pool started CUDA (its judge said so) within ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        with self._guard:
            waiting = [s for queue in self._by_gpu.values() for s in queue]
        return all(s.judge.wait_ready(s.key, max(0.0, deadline - time.monotonic())) for s in waiting)
