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
                                             NN_<step>.pt    outputs and inputs-after (torch.save)
    verdict_NN        go | stop (signed)
                                             gate_<name>     ready (signed): GPU work synced, wants to be timed
    verdict_gate_<name>  go (signed)
                                             ref_timing.json the reference's timing, before candidate import
"""

from __future__ import annotations

import hashlib
import hmac
import io
import json
import os
import secrets
from typing import Any

from tritonrl.atomic import write_atomic

__all__ = ["CODE_FILE", "Signer", "digest", "new_secret", "step_name", "verdict_name", "write_atomic"]

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


def tensors_to_bytes(obj: Any) -> bytes:
    import torch

    buffer = io.BytesIO()
    torch.save(obj, buffer)
    return buffer.getvalue()


def tensors_from_bytes(data: bytes) -> Any:
    """Plain tensors and containers only (``weights_only``): nothing a child pickled can run here."""
    import torch

    return torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)


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
