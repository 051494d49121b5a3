"""The parent/child protocol of the sandbox, in one place: file names, signed records, the atomic writer.

A child (``tritonrl.verify.harness`` or ``reference``) reports through files in its private working directory;
the trusted parent (``tritonrl.verify.verifier``) reads them. Every record is signed with HMAC-SHA256 under a
per-child secret that the parent generates and hands to the child inside the job message (the zygote's pipe,
never a file), so a candidate that writes files into its directory cannot forge a step, a launch count, a gate
or a verdict: ``Signer.read`` returns None for anything not signed with the secret, and the parent treats that
as tampering. Tensor payloads are bound to their record by their SHA-256 digest.

    parent                                   child
    ------                                   -----
                                             NN_<step>.json  {ok, flag, error, launches, digest, ..., mac}
                                             NN_<step>.pt    outputs and inputs-after digests (tensors_to_bytes)
    verdict_NN        go | stop (signed)
                                             gate_<name>     ready (signed): GPU work synced, wants to be timed
    verdict_gate_<name>  go (signed)
                                             ref_timing.json the reference's timing, before candidate import
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from typing import Any

from tritonrl.atomic import write_atomic

__all__ = ["CODE_FILE", "Signer", "digest", "new_secret", "payload_parts", "step_name", "tensor_digest",
           "tensors_from_bytes", "tensors_to_bytes", "verdict_name", "write_atomic", "write_payload"]

SECRET_BYTES = 32
CODE_FILE = "candidate.py"  # the candidate's code in its child's directory


def new_secret() -> str:
    return secrets.token_hex(SECRET_BYTES)


def step_name(index: int, name: str) -> str:
    """``NN_<name>``: the base name of a step's record (``.json``) and payload (``.pt``)."""
    return f"{index:02d}_{name}"


def verdict_name(key: str) -> str:
    return f"verdict_{key}"


def gate_name(name: str) -> str:
    return f"gate_{name}"


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


PAYLOAD_MAGIC = b"TRLPAY1\n"
MAX_HEADER_BYTES = 16 << 20
_DTYPES = ("float16", "bfloat16", "float32", "float64", "complex64", "complex128", "uint8", "int8", "int16",
           "int32", "int64", "bool")


def tensors_to_bytes(obj: Any) -> bytes:
    """``payload_parts(obj)`` joined into one buffer."""
    return b"".join(payload_parts(obj))


def write_payload(path: str, obj: Any) -> str:
    """Write ``obj``'s payload to ``path`` atomically, without joining it in memory first; returns its digest."""
    parts = payload_parts(obj)
    h = hashlib.sha256()
    for part in parts:
        h.update(part)
    write_atomic(path, parts)
    return h.hexdigest()


def payload_parts(obj: Any) -> list:
    """``obj`` (dicts with str keys, lists, tuples, str, int, float, bool, None and tensors) as the buffers that,
    written in order, make its payload (the tensors' own memory, not copied when already contiguous on the CPU).

    Layout: ``PAYLOAD_MAGIC``, the header's length (8 bytes, little-endian), the header (JSON: the structure, each
    tensor replaced by ``{"t": i}``, and a table of dtype, shape and offset per tensor), then the tensors' raw
    bytes. No pickle on either side: faster than ``torch.save`` (``benchmarks/payload_cost.py``) and nothing in it
    can run code when read.
    Tensors are written as their contiguous values (views and strides are not kept).
    """
    import torch

    blobs: list[memoryview] = []
    table: list[dict[str, Any]] = []
    offset = 0

    def encode(value: Any) -> Any:
        nonlocal offset
        if isinstance(value, torch.Tensor):
            name = str(value.dtype).removeprefix("torch.")
            if name not in _DTYPES:
                raise TypeError(f"cannot send a {value.dtype} tensor")
            flat = value.detach().to("cpu").contiguous().reshape(-1)
            raw = memoryview(flat.view(torch.uint8).numpy()) if flat.numel() else memoryview(b"")
            table.append({"dtype": name, "shape": list(value.shape), "offset": offset, "nbytes": raw.nbytes})
            blobs.append(raw)
            offset += raw.nbytes
            return {"t": len(table) - 1}
        if isinstance(value, dict):
            if not all(isinstance(k, str) for k in value):
                raise TypeError("payload dict keys must be str")
            return {"d": {k: encode(v) for k, v in value.items()}}
        if isinstance(value, (list, tuple)):
            return {"l": [encode(v) for v in value]}
        if value is None or isinstance(value, (str, int, float, bool)):
            return {"v": value}
        raise TypeError(f"cannot send a {type(value).__name__} in a payload")

    header = json.dumps({"root": encode(obj), "tensors": table}).encode()
    return [PAYLOAD_MAGIC, len(header).to_bytes(8, "little"), header, *blobs]


def tensors_from_bytes(data: bytes | bytearray) -> Any:
    """What ``tensors_to_bytes`` wrote; raises ``ValueError`` on anything malformed (a child wrote it).

    Tensors share memory with ``data`` (no copy) when it is writable (a ``bytearray``); else ``data`` is copied
    once."""
    import torch

    view = memoryview(data)
    if view.readonly:
        view = memoryview(bytearray(view))
    start = len(PAYLOAD_MAGIC) + 8
    if view.nbytes < start or bytes(view[:len(PAYLOAD_MAGIC)]) != PAYLOAD_MAGIC:
        raise ValueError("not a payload")
    size = int.from_bytes(view[len(PAYLOAD_MAGIC):start], "little")
    if size > min(MAX_HEADER_BYTES, view.nbytes - start):
        raise ValueError("payload header too large")
    header = json.loads(bytes(view[start:start + size]))
    base = start + size
    tensors = []
    for entry in header["tensors"]:
        dtype = getattr(torch, entry["dtype"]) if entry["dtype"] in _DTYPES else None
        shape, offset, nbytes = entry["shape"], entry["offset"], entry["nbytes"]
        if dtype is None or not all(isinstance(d, int) and d >= 0 for d in shape) or not isinstance(offset, int):
            raise ValueError("bad tensor entry")
        count = 1
        for d in shape:
            count *= d
        if nbytes != count * dtype.itemsize or offset < 0 or base + offset + nbytes > view.nbytes:
            raise ValueError("tensor bytes out of range")
        flat = (torch.frombuffer(view, dtype=torch.uint8, count=nbytes, offset=base + offset) if nbytes
                else torch.empty(0, dtype=torch.uint8))
        tensors.append(flat.view(dtype).reshape(shape))

    def decode(node: Any) -> Any:
        if not isinstance(node, dict) or len(node) != 1:
            raise ValueError("bad payload node")
        (kind, value), = node.items()
        if kind == "t":
            return tensors[value]
        if kind == "d":
            return {k: decode(v) for k, v in value.items()}
        if kind == "l":
            return [decode(v) for v in value]
        if kind == "v" and (value is None or isinstance(value, (str, int, float, bool))):
            return value
        raise ValueError("bad payload node")

    return decode(header["root"])


def tensor_digest(value: Any) -> str | None:
    """SHA-256 of a tensor's dtype, shape and values (on the CPU), or None for anything that is not one: what the
    parent compares to tell whether a forward pass changed its inputs, without moving the inputs themselves."""
    import torch

    if not isinstance(value, torch.Tensor):
        return None
    flat = value.detach().to("cpu").contiguous().reshape(-1)
    h = hashlib.sha256(f"{flat.dtype}|{tuple(value.shape)}|".encode())
    if flat.numel():
        h.update(memoryview(flat.view(torch.uint8).numpy()))
    return h.hexdigest()


class Signer:
    """Signs and checks the records of one child with its secret (hex)."""

    def __init__(self, secret_hex: str) -> None:
        self._key = bytes.fromhex(secret_hex)

    def mac(self, name: str, body: str) -> str:
        return hmac.new(self._key, f"{name}\n{body}".encode(), hashlib.sha256).hexdigest()

    def dumps(self, name: str, record: dict[str, Any]) -> str:
        body = json.dumps(record, sort_keys=True)
        return json.dumps({"body": body, "mac": self.mac(name, body)})

    def write(self, directory: str, name: str, record: dict[str, Any]) -> None:
        write_atomic(os.path.join(directory, name), self.dumps(name, record))

    def loads(self, name: str, text: str) -> dict[str, Any] | None:
        try:
            wrapper = json.loads(text)
            body, mac = wrapper["body"], wrapper["mac"]
            if not (isinstance(body, str) and isinstance(mac, str)):
                return None
            if not hmac.compare_digest(mac, self.mac(name, body)):
                return None
            record = json.loads(body)
        except (ValueError, KeyError, TypeError):
            return None
        return record if isinstance(record, dict) else None

    def read(self, directory: str, name: str) -> dict[str, Any] | None:
        """The record, or None when it is missing, unreadable or not signed with this child's secret."""
        try:
            with open(os.path.join(directory, name), errors="replace") as fh:
                text = fh.read(1 << 20)
        except OSError:
            return None
        return self.loads(name, text)
