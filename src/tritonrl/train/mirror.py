"""Mirror a run directory to an fsspec URL (``gs://bucket/run``, ``s3://...``, ``file:///...``, ``memory://...``).

Machines get pre-empted and local disks vanish with them. ``Mirror.push`` copies new or changed files up
(unchanged files are skipped by size and mtime, so multi-GB weights go once); ``Mirror.pull`` restores a run
directory that is gone locally (``--resume`` does this). ``MirrorThread`` pushes every ``interval_s`` in
the background; the trainer also pushes after each checkpoint and once more on SIGTERM.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import threading
from pathlib import Path

import fsspec

from tritonrl.train.periodic import PeriodicThread

log = logging.getLogger(__name__)


class Mirror:
    def __init__(self, url: str, local_dir: str | Path):
        self.url = url.rstrip("/")
        self.local_dir = Path(local_dir)
        self.fs, self.root = fsspec.core.url_to_fs(self.url)
        self._pushed: dict[str, tuple[int, int]] = {}
        self._lock = threading.Lock()

    def push(self) -> int:
        """Upload new or changed files; returns how many were uploaded."""
        with self._lock:
            count = 0
            for path in sorted(p for p in self.local_dir.rglob("*") if p.is_file()):
                rel = path.relative_to(self.local_dir).as_posix()
                if "/." in f"/{rel}":  # temp files of atomic writes
                    continue
                stat = path.stat()
                if self._pushed.get(rel) == (stat.st_size, stat.st_mtime_ns):
                    continue
                remote = f"{self.root}/{rel}"
                self.fs.makedirs(remote.rsplit("/", 1)[0], exist_ok=True)
                self.fs.put_file(str(path), remote)
                self._pushed[rel] = (stat.st_size, stat.st_mtime_ns)
                count += 1
            return count

    def exists(self) -> bool:
        return bool(self.fs.exists(self.root)) and bool(self.fs.find(self.root))

    def pull(self) -> int:
        """Download every mirrored file into the local run directory; returns how many. fsspec's recursive ``get``
        fills a temporary directory beside it first, so an interrupted pull leaves no half run directory (whose
        manifest would stop the next ``--resume`` from pulling again): the run dir is that directory renamed, or,
        where it exists, gets the files moved in."""
        with self._lock:
            self.local_dir.parent.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(prefix=f".{self.local_dir.name}.pull-", dir=self.local_dir.parent))
            try:
                self.fs.get(f"{self.root.rstrip('/')}/", f"{tmp}/", recursive=True)
                count = sum(1 for p in tmp.rglob("*") if p.is_file())
                if self.local_dir.exists():
                    shutil.copytree(tmp, self.local_dir, copy_function=shutil.move, dirs_exist_ok=True)
                else:
                    tmp.rename(self.local_dir)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
            return count


class MirrorThread(PeriodicThread):
    """Push ``mirror`` every ``interval_s`` seconds until ``stop()``; errors are logged, never fatal."""

    def __init__(self, mirror: Mirror, interval_s: float = 600.0):
        super().__init__(lambda: safe_push(mirror), interval_s, name="tritonrl-mirror")
        self.mirror = mirror


def safe_push(mirror: Mirror | None) -> None:
    """Push, logging failures: a flaky bucket must not kill a training run."""
    if mirror is None:
        return
    try:
        mirror.push()
    except Exception as exc:  # noqa: BLE001 - any storage error is reported and retried next time
        log.warning("mirror push to %s failed: %s", mirror.url, exc)
