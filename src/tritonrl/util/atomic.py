"""The one atomic file writer: readers see the old file or the new one, never half of one.

Used for everything whose half-written state would mislead a reader: run manifests and checkpoints' metadata
(``durable=True``: flushed to disk before the rename, so a pre-emption cannot leave an empty file behind), the
sandbox protocol's records and payloads, the verifier's caches. The temporary file is created exclusively, with
mode 0600, beside the target (the rename never crosses file systems), under the path as given: a relative path
stays relative, which a sandboxed child needs (its directory is reachable only through its cwd).
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path


def write_atomic(path: str | os.PathLike, data: bytes | str | list | tuple, durable: bool = False) -> None:
    """Write ``data`` (text, bytes, or a list of bytes-like parts written in order) to ``path`` through a temporary
    file and a rename; the parent directory is created."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as fh:
            for part in data if isinstance(data, (list, tuple)) else [data]:
                fh.write(part.encode() if isinstance(part, str) else part)
            if durable:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
