"""Triton's launchers built by the judge, once a signature, for every later child of its GPU.

    seed = LauncherSeed(template)     # the judge's Triton build, read-only in each child's view
    seed.learn(reply["launchers"])    # signatures a child's helper had to build: built here, in the background

On a GPU, Triton compiles a C launcher for each kernel signature it meets (Triton 3.6: ``make_launcher``; 3.9's is
generic and builds none). A candidate's child cannot run a compiler: its toolchain helper builds each launcher with
``cc`` (``tritonrl.verify.child.toolchain``), about a second of every candidate's compile stage on a loaded H200
(docs/training.md, "Where the reward's seconds go"), and the signatures repeat from candidate to candidate (a
pointer or two, an int, a block size). The judge builds the signatures a child reports into ``launchers/`` of
its seed, where the next child's helper finds them by the hash of the source it generates itself.

What a child reports is a claim: each signature is checked as the helper checks it (Triton's type names only), the
source is generated here by Triton's own ``make_launcher``, never taken from the child, and a session may ask for
``PER_SESSION`` launchers (of ``toolchain.MAX_ARGUMENTS`` type names at most), the seed holds ``MAX_LAUNCHERS`` (the oldest go
first), and the builds run niced, one at a time. A file appears only whole (built in a folder of its own, then
renamed). Nothing a child or its helper built is ever shared. Only where the child's files are isolated (a child
that could write the seed could plant a launcher for the next: ``Verifier._launcher_seed``).
"""

from __future__ import annotations

import json
import logging
import os
import queue
import shutil
import tempfile
import threading
import time
from typing import Any

from tritonrl.verify.shared.launcher_source import (
    LAUNCHERS,
    checked_signature,
    compile_module,
    launcher_key,
    launcher_source,
)

log = logging.getLogger(__name__)

PER_SESSION = 8  # signatures taken from one child's reports
MAX_LAUNCHERS = 512  # launchers the seed holds; past it, the oldest quarter goes (children rebuild what they need)
PENDING = 64  # signatures waiting to be built
SEEN = 4096  # signatures remembered as taken (then forgotten, all at once: a few rebuilt)
STALE_BUILD_S = 600  # a build folder this old was left by a judge that died building
NICE = 10  # the builder thread's niceness (its compiler's too): the judge's other work first


class LauncherSeed:
    """The judge's launchers, in ``<template>/launchers``, built by one background thread."""

    def __init__(self, template: str) -> None:
        self.dir = os.path.join(template, LAUNCHERS)
        os.makedirs(self.dir, mode=0o755, exist_ok=True)
        os.chmod(self.dir, 0o755)  # whatever the umask: the children's user reads it
        self._sweep()
        self._pending: queue.Queue[tuple[list, list | None]] = queue.Queue(maxsize=PENDING)
        self._seen: set[str] = set()
        self._guard = threading.Lock()
        self._worker: threading.Thread | None = None
        self.built = 0

    def learn(self, reported: Any, room: int = PER_SESSION) -> int:
        """Queue the signatures of ``reported`` (a child's ``launchers``: ``{"signature": [...], "tensordesc":
        [...] | None}`` each) not seen before, at most ``room``; how many were taken."""
        if not isinstance(reported, list):
            return 0
        taken = 0
        for entry in reported[:max(0, room)]:
            try:
                signature, tensordesc = entry["signature"], entry.get("tensordesc")
                checked_signature(signature, tensordesc)  # cheap, before anything is kept of it
                token = json.dumps([signature, tensordesc])
            except Exception:  # noqa: BLE001 - a claim that is not a signature (nested past Python's depth too)
                continue
            with self._guard:
                if token in self._seen:
                    continue
                try:
                    self._pending.put_nowait((signature, tensordesc))
                except queue.Full:
                    break  # not remembered: a later report may bring it again
                if len(self._seen) >= SEEN:
                    self._seen.clear()
                self._seen.add(token)
            taken += 1
        if taken:
            self._start()
        return taken

    def build(self, signature: Any, tensordesc: Any) -> str | None:
        """The launcher of ``signature`` in the seed (built now unless it is there): its path, or None where the
        signature is not Triton's (or past ``checked_signature``'s limits)."""
        try:
            src = launcher_source(signature, tensordesc)
        except Exception as exc:  # noqa: BLE001 - not a signature Triton makes
            log.debug("launcher not built for %r: %s", signature, exc)
            return None
        path = os.path.join(self.dir, launcher_key(src) + ".so")
        if os.path.exists(path):
            return path
        self._make_room()
        with tempfile.TemporaryDirectory(dir=self.dir, prefix=".build-") as tmp:
            built = compile_module("__triton_launcher", src, tmp)
            os.chmod(built, 0o644)
            os.replace(built, path)  # whole or not at all: a helper never reads a file half written
        self.built += 1
        return path

    def _make_room(self) -> None:
        """Below ``MAX_LAUNCHERS``: past it the oldest quarter goes (a helper reading one keeps its open file)."""
        try:
            built = [os.path.join(self.dir, n) for n in os.listdir(self.dir) if n.endswith(".so")]
            if len(built) < MAX_LAUNCHERS:
                return
            built.sort(key=lambda p: os.stat(p).st_mtime)
            for old in built[:max(1, len(built) // 4)]:
                os.unlink(old)
        except OSError as exc:  # another judge's sweep raced this one: the next build tries again
            log.debug("launchers not swept: %s", exc)

    def _sweep(self) -> None:
        """Build folders a judge that died building left behind."""
        now = time.time()
        for name in os.listdir(self.dir):
            path = os.path.join(self.dir, name)
            try:
                if name.startswith(".build-") and now - os.stat(path).st_mtime > STALE_BUILD_S:
                    shutil.rmtree(path, ignore_errors=True)
            except OSError:
                pass

    def _start(self) -> None:
        with self._guard:
            if self._worker is None:
                self._worker = threading.Thread(target=self._work, daemon=True, name="tritonrl-launchers")
                self._worker.start()

    def _work(self) -> None:
        try:  # this thread only (Linux niceness is a thread's), and the compilers it starts
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), NICE)
        except (OSError, AttributeError):
            pass
        while True:
            signature, tensordesc = self._pending.get()
            try:
                self.build(signature, tensordesc)
            except Exception as exc:  # noqa: BLE001 - an optimisation: children build their own
                log.warning("the judge could not build a launcher (%s): children build it themselves", exc)
