"""Messages between the verifier's processes: length-prefixed JSON over Unix sockets, with file descriptors.

    send(sock, {"op": "run", ...}, fds=[arena.fd])
    message, fds = recv(sock, timeout_s=5.0)      # raises Closed at end of stream, TimedOut past the limit

Who talks to whom (docs/verifier.md, "Processes"): the parent and the zygote (jobs to fork); the parent and each
judge (sessions to run, verdicts back); a judge and one candidate child (the calls of that candidate). A message
is a 4-byte little-endian length and a JSON object of at most ``MAX_MESSAGE_BYTES``; file descriptors ride on the
first byte (``SCM_RIGHTS``). A child's messages are claims, never trusted as such: the receiver checks sizes and
types (``expect``).
"""

from __future__ import annotations

import json
import select
import socket
import time
from typing import Any

CODE_FILE = "candidate.py"  # the candidate's code, in its child's working directory
CODE_PATH = "/proc/self/cwd/" + CODE_FILE  # the name it is imported under (its code objects' co_filename)
MAX_MESSAGE_BYTES = 4 << 20
MAX_FDS = 8


class Closed(EOFError):
    """The other side closed its end (it exited, or was killed)."""


class TimedOut(TimeoutError):
    """No whole message arrived within the time limit."""


class BadMessage(ValueError):
    """Bytes that are not a message of this protocol (too large, not JSON, not an object)."""


def send(sock: socket.socket, message: dict[str, Any], fds: list[int] | tuple[int, ...] = ()) -> None:
    body = json.dumps(message, separators=(",", ":")).encode()
    if len(body) > MAX_MESSAGE_BYTES:
        raise BadMessage(f"message of {len(body)} bytes is over the limit")
    data = len(body).to_bytes(4, "little") + body
    if fds:
        sent = socket.send_fds(sock, [data[:1]], list(fds))
        data = data[sent:]
    sock.sendall(data)


def recv(sock: socket.socket, timeout_s: float | None = None) -> tuple[dict[str, Any], list[int]]:
    """The next message and any file descriptors that came with it."""
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    head, fds = _read(sock, 4, deadline, want_fds=True)
    size = int.from_bytes(head, "little")
    if size > MAX_MESSAGE_BYTES:
        raise BadMessage(f"message of {size} bytes is over the limit")
    body, _ = _read(sock, size, deadline, want_fds=False)
    try:
        message = json.loads(body)
    except ValueError as exc:
        raise BadMessage(f"not JSON: {exc}") from None
    if not isinstance(message, dict):
        raise BadMessage("not a JSON object")
    return message, fds


def _read(sock: socket.socket, n: int, deadline: float | None, want_fds: bool) -> tuple[bytes, list[int]]:
    chunks, got, fds = [], 0, []
    while got < n:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([sock], [], [], left)[0]:
                raise TimedOut(f"no message within the time limit ({got} of {n} bytes)")
        if want_fds and not got:
            data, new_fds, _, _ = socket.recv_fds(sock, n, MAX_FDS)
            fds += new_fds
        else:
            data = sock.recv(n - got)
        if not data:
            raise Closed("the other side closed the connection")
        chunks.append(data)
        got += len(data)
    return b"".join(chunks), fds


def expect(message: dict[str, Any], key: str, kind: type | tuple[type, ...], default: Any = ...) -> Any:
    """``message[key]`` if it is of ``kind`` (bool is not an int here), else ``default`` or ``BadMessage``."""
    value = message.get(key, default)
    ok = isinstance(value, kind) and not (isinstance(value, bool) and bool not in _as_tuple(kind))
    if not ok:
        if default is not ... and key not in message:
            return default
        raise BadMessage(f"{key!r} is {type(value).__name__}, expected {kind}")
    return value


def _as_tuple(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)
