"""Messages between the verifier's processes: length-prefixed JSON over Unix sockets, with file descriptors.

    send(sock, {"op": "run", ...}, fds=[arena.fd])
    message, fds = recv(sock, timeout_s=5.0)      # raises Closed at end of stream, TimedOut past the limit

Who talks to whom (docs/verifier.md, "Processes"): the parent and the zygote (jobs to fork); the parent and each
judge (sessions to run, verdicts back); a judge and one candidate child (the calls of that candidate). A message
is a 4-byte little-endian length and a JSON object of at most ``MAX_MESSAGE_BYTES``; file descriptors ride on the
first byte (``SCM_RIGHTS``). A child's messages are claims, never trusted as such: the receiver checks sizes and
types (``expect``). They are also *sealed*: the candidate's code shares its process with the harness, and can
write to the harness's socket (``os.write`` is not audited), so each message the harness sends carries a MAC
(HMAC-SHA256 of its sequence number and body, under a key only the parent, the judge and the harness hold: a
``Seal``); the judge refuses any message that does not verify, so a message the candidate forged or replayed is
``BadMessage`` (its verdict: ``tampering``), never a reply.
"""

from __future__ import annotations

import hmac
import json
import os
import select
import socket
import time
from typing import Any

CODE_FILE = "candidate.py"  # the candidate's code, in its child's working directory
CODE_PATH = "/proc/self/cwd/" + CODE_FILE  # the name it is imported under (its code objects' co_filename)
MAX_MESSAGE_BYTES = 4 << 20
MAX_FDS = 8
MAC_BYTES = 16


class Closed(EOFError):
    """The other side closed its end (it exited, or was killed)."""


class TimedOut(TimeoutError):
    """No whole message arrived within the time limit."""


class BadMessage(ValueError):
    """Bytes that are not a message of this protocol (too large, not JSON, not an object)."""


class Seal:
    """One direction of one socket, sealed: the sender's ``sign`` and the receiver's ``check`` hold the same key
    and count the same messages, so a message out of order, replayed or made by anyone else fails ``check``."""

    def __init__(self, key: bytes) -> None:
        self._key = key
        self._seq = 0

    def _mac(self, body: bytes) -> bytes:
        mac = hmac.new(self._key, self._seq.to_bytes(8, "little") + body, "sha256").digest()[:MAC_BYTES]
        self._seq += 1
        return mac

    def sign(self, body: bytes) -> bytes:
        return self._mac(body)

    def check(self, mac: bytes, body: bytes) -> None:
        if not hmac.compare_digest(mac, self._mac(body)):
            raise BadMessage("a message not sealed by the verifier's harness (forged, replayed or out of order)")


def send(sock: socket.socket, message: dict[str, Any], fds: list[int] | tuple[int, ...] = (),
         seal: Seal | None = None) -> None:
    body = json.dumps(message, separators=(",", ":")).encode()
    if len(body) > MAX_MESSAGE_BYTES:
        raise BadMessage(f"message of {len(body)} bytes is over the limit")
    data = len(body).to_bytes(4, "little") + (seal.sign(body) if seal is not None else b"") + body
    if fds:
        sent = socket.send_fds(sock, [data[:1]], list(fds))
        data = data[sent:]
    sock.sendall(data)


def recv(sock: socket.socket, timeout_s: float | None = None, seal: Seal | None = None,
         keep_fds: bool = True) -> tuple[dict[str, Any], list[int]]:
    """The next message and any file descriptors that came with it (``keep_fds=False``: none are expected, any
    that came are closed). ``seal``: the message must verify under it (else ``BadMessage``)."""
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    head, fds = _read(sock, 4, deadline, want_fds=True)
    if not keep_fds:
        for fd in fds:
            os.close(fd)
        fds = []
    size = int.from_bytes(head, "little")
    if size > MAX_MESSAGE_BYTES:
        raise BadMessage(f"message of {size} bytes is over the limit")
    extra = MAC_BYTES if seal is not None else 0
    data, _ = _read(sock, size + extra, deadline, want_fds=False)
    body = data[extra:]
    if seal is not None:
        seal.check(data[:extra], body)
    try:
        message = json.loads(body)
    except (ValueError, RecursionError) as exc:
        raise BadMessage(f"not JSON: {type(exc).__name__}") from None
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
