"""The reference ``Model``'s timings, kept by the judge: in memory, and on disk (signed) for the next run.

    timings = TimingStore(cache_dir, gpu_name)
    report = timings.get(key)            # None until measured
    timings.put(key, report)
    timings.trust_disk(True)             # once a child has shown it cannot reach the cache directory

A reference timing is worth keeping across runs (measuring one takes a warm-up and tens of timed calls, and a
verdict's speedup should not move because a run restarted). On disk each entry is a JSON body with its
HMAC-SHA256 under a key kept in the cache directory, read only while candidates cannot reach that directory: a
child reports its isolation when it starts, and the first that was not isolated (no read-only, hidden
directories) turns the disk off for good and withdraws the key at close, so nothing a candidate could have
written is ever believed.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import threading
from typing import Any

from tritonrl.util.atomic import write_atomic
from tritonrl.verify.shared.directories import default_cache_dir

KEY_FILE = ".hmac-key"


class TimingStore:
    def __init__(self, cache_dir: str | None, gpu_name: str) -> None:
        self.dir = cache_dir or default_cache_dir()
        os.makedirs(self.dir, mode=0o700, exist_ok=True)
        self.gpu_name = gpu_name
        self._memory: dict[str, dict] = {}
        self._trusted: bool | None = None  # None: not known yet (no child has reported)
        self._guard = threading.Lock()
        self.stats = {"timing_disk_hits": 0, "timing_measured": 0}

    def trust_disk(self, isolated: bool) -> None:
        """A child reported whether it was isolated from the cache directory; one that was not ends the trust."""
        with self._guard:
            self._trusted = isolated if self._trusted is None else (self._trusted and isolated)

    @property
    def disk(self) -> bool:
        return bool(self._trusted)

    def get(self, key: str) -> dict[str, Any] | None:
        with self._guard:
            if key in self._memory:
                return self._memory[key]
        if not self.disk:
            return None
        report = self._read(key)
        if report is not None:
            self.stats["timing_disk_hits"] += 1
            with self._guard:
                self._memory[key] = report
        return report

    def put(self, key: str, report: dict[str, Any]) -> None:
        with self._guard:
            self._memory[key] = report
        self.stats["timing_measured"] += 1
        if self.disk:
            body = json.dumps(report)
            try:
                write_atomic(self._path(key), json.dumps({"body": body, "mac": self._mac(body, create=True)}))
            except OSError:
                pass  # the disk is an optimisation for restarts; the figure is in memory

    def close(self) -> None:
        if self._trusted is False:
            try:
                os.unlink(os.path.join(self.dir, KEY_FILE))
            except OSError:
                pass

    def _path(self, key: str) -> str:
        return os.path.join(self.dir, f"timing-{hashlib.sha256(key.encode()).hexdigest()[:32]}.json")

    def _secret(self, create: bool) -> bytes | None:
        path = os.path.join(self.dir, KEY_FILE)
        try:
            with open(path, "rb") as fh:
                key = fh.read()
            return key if len(key) == 32 else None
        except OSError:
            if not create:
                return None
        write_atomic(path, os.urandom(32))
        return self._secret(create=False)

    def _mac(self, body: str, create: bool) -> str | None:
        secret = self._secret(create)
        return None if secret is None else hmac.new(secret, body.encode(), hashlib.sha256).hexdigest()

    def _read(self, key: str) -> dict[str, Any] | None:
        try:
            with open(self._path(key)) as fh:
                wrapper = json.load(fh)
            body, mac = wrapper["body"], wrapper["mac"]
        except (OSError, ValueError, KeyError, TypeError):
            return None
        expected = self._mac(str(body), create=False)
        if expected is None or not hmac.compare_digest(str(mac), expected):
            return None
        try:
            data = json.loads(body)
        except ValueError:
            return None
        return data if isinstance(data, dict) and data.get("ok") else None
