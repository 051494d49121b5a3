"""Round-3 red team: denial of service against the judge (tests/verify/fixtures/integrity/README.md, "Round 3").

A candidate must not be able to take away another candidate's verdict, nor turn its own into "no verdict"
(``verifier_error``: left out of every evaluation number, judged again on ``--resume``). Each test here is an
attack that did one of these when written; it fails while the hole is open (nothing is xfail on purpose).

- ``test_arena_shrink_costs_no_other_verdict``: the CPU arena is a ``memfd`` the judge maps and never seals; the
  child holds its fd and shrinks it (``os.fdopen(fd, "r+b").truncate(0)``: the ``open`` audit event is raised by
  os.py's frame, not the candidate's, and ``FileIO.truncate`` raises none). The judge's next read of the arena
  is a SIGBUS: the judge dies with every session in it; the parent restarts it and judges each item once more,
  the attacker kills the new judge too, and every candidate in flight ends as ``verifier_error``.
- ``test_judge_closes_fds_a_child_sends``: ``wire.recv`` accepts up to 8 file descriptors with every message
  (``SCM_RIGHTS``) and the session ignores them: they stay open in the long-lived judge. A child (its harness
  reached through any hole, or a raw ``sendmsg`` on its socket) attaches 8 fds to each reply; the judge runs out
  of descriptors (no arena, no socket) for every later candidate.
- ``test_forged_reply_is_tampering`` (after the fixes): the same raw write, a well-formed reply this time; every
  message of the harness's is sealed (``wire.Seal``), so a forged one is ``tampering``, never a reply.
- ``test_deep_json_is_a_verdict_not_a_verifier_error``: the child's socket is fd 3 and ``os.write`` is not
  audited: a candidate writes its own "reply", a JSON object nested 100k deep. ``json.loads`` raises
  ``RecursionError`` (not ``ValueError``), which ``wire.recv`` does not turn into ``BadMessage``: the session
  dies with a ``verifier_error``, so the candidate escapes its verdict.
"""

from __future__ import annotations

import os
import queue
import socket
import threading
from pathlib import Path

import pytest

from tests.verify.test_integrity import TASKS
from tests.verify.test_redteam import CUDA, describe
from tritonrl.config import VerifyConfig
from tritonrl.verify import Verifier, VerifyItem
from tritonrl.verify.shared import wire
from tritonrl.verify.shared.flags import Flag

GOOD_RELU = (Path(__file__).parent / "fixtures" / "runtime" / "good_relu.py").read_text()

RELU_KERNEL = '''
import os

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.where(v > 0, v, 0.0), mask=mask)


def _fds(prefix):
    found = []
    for fd in range(3, 64):
        try:
            if os.readlink(f"/proc/self/fd/{fd}").startswith(prefix):
                found.append(fd)
        except OSError:
            pass
    return found
'''

# The output is float64 (a kernel writes it): the harness does not copy it into the arena (wrong dtype), so the
# child itself never touches the shrunk arena; the judge reads the input slots next and takes the SIGBUS.
ARENA_SHRINK = RELU_KERNEL + '''

class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty(x.shape, dtype=torch.float64, device=x.device)
        n = x.numel()
        relu_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)
        for fd in _fds("/memfd:tritonrl-arena"):
            os.fdopen(fd, "r+b", closefd=False).truncate(0)
        return out
'''

DEEP_JSON = RELU_KERNEL + '''

class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        n = x.numel()
        relu_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)
        body = b'{"ok": ' + b"[" * 100000 + b"]" * 100000 + b"}"
        for fd in _fds("socket:"):
            os.write(fd, len(body).to_bytes(4, "little") + body)
        return out
'''


# A well-formed reply of the harness's, written by the candidate straight to its socket during the first trial:
# "ok", one launch, and the right answer copied into the arena by hand (the harness's own reply, saying
# torch_compute, would come after it). Refused: it is not sealed with the harness's key.
FORGED_REPLY = RELU_KERNEL + '''
import json


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.relu(x)
        body = json.dumps({"ok": True, "launches": 1, "elapsed_s": 0.001, "outputs": [
            {"type": "torch.Tensor", "dtype": "float32", "shape": list(x.shape), "device": x.device.type}]}).encode()
        for fd in _fds("socket:"):
            os.write(fd, len(body).to_bytes(4, "little") + body)
        return out
'''


def _config(tmp_path: Path) -> VerifyConfig:
    return VerifyConfig(device="auto" if CUDA else "cpu", timeout_s=15, workers=2, cache_dir=str(tmp_path),
                        static_checks=False)


@pytest.mark.skipif(CUDA, reason="the arena is a CUDA allocation on a GPU; this attack is the CPU memfd's")
def test_arena_shrink_costs_no_other_verdict(tmp_path):
    with Verifier(_config(tmp_path)) as verifier:
        items = [VerifyItem(TASKS["relu_small"], code=ARENA_SHRINK)] + \
                [VerifyItem(TASKS["relu_small"], code=GOOD_RELU) for _ in range(3)]
        results = verifier.verify_many(items)
        after = verifier.verify(TASKS["relu_small"], code=GOOD_RELU)
    verdicts = [describe(r) for r in results]
    assert all(r.correct for r in results[1:]), f"honest candidates beside the attacker: {verdicts[1:]}"
    assert after.correct, f"an honest candidate after the attack: {describe(after)}"
    assert Flag.VERIFIER_ERROR.value not in results[0].flags, f"the attacker escaped its verdict: {verdicts[0]}"


def test_deep_json_is_a_verdict_not_a_verifier_error(tmp_path):
    with Verifier(_config(tmp_path)) as verifier:
        result = verifier.verify(TASKS["relu_small"], code=DEEP_JSON)
    assert Flag.VERIFIER_ERROR.value not in result.flags, f"no verdict: {describe(result)}: {result.error}"
    assert result.correct is False


def test_forged_reply_is_tampering(tmp_path):
    with Verifier(_config(tmp_path)) as verifier:
        result = verifier.verify(TASKS["relu_small"], code=FORGED_REPLY)
    assert result.correct is False and Flag.TAMPERING.value in result.flags, describe(result)
    assert "not sealed" in (result.error or ""), result.error


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_judge_closes_fds_a_child_sends(tmp_path):
    """A fake child on the other end of a session's socket: it says hello and ready and answers the import call, 8
    file descriptors riding on each message. After the session, the judge's process holds none of them."""
    from tritonrl.verify.judge.server import Judge
    from tritonrl.verify.judge.session import Session
    from tritonrl.verify.parent.plan import build_trials

    judge = Judge({"device": "cpu", "salt": "dos-test", "cache_dir": str(tmp_path)})
    config = VerifyConfig(device="cpu", timeout_s=10)
    trials = build_trials(TASKS["relu_small"], config, "cpu")
    message = {"config": {"timeout_s": 10, "atol": config.atol, "rtol": config.rtol, "randomize": True},
               "seal": "00" * 16}
    plans = queue.Queue()
    plans.put({"op": "plan", "trials": [t.to_dict() for t in trials], "timing": {"enabled": False}})
    judge_end, child_end = socket.socketpair()
    seal = wire.Seal(bytes(16))  # the fake child plays the harness: it holds the key

    def fake_child() -> None:
        for reply in ({"op": "hello"}, {"op": "ready", "isolation": {}},
                      {"ok": False, "flag": "import_error", "error": "no"}):
            fds = [os.open("/dev/null", os.O_RDONLY) for _ in range(wire.MAX_FDS)]
            wire.send(child_end, reply, fds, seal=seal)
            for fd in fds:
                os.close(fd)
            if reply.get("op") in ("hello", "ready"):
                wire.recv(child_end, timeout_s=10)  # the start call, then the import call

    before = _open_fds()
    child = threading.Thread(target=fake_child)
    child.start()
    facts = Session(judge, message, judge_end, plans).run()
    child.join(10)
    judge_end.close()
    child_end.close()
    leaked = _open_fds() - before
    assert "import_error" in facts["flags"], facts
    assert leaked <= 0, f"the judge kept {leaked} file descriptors its candidate's child sent it"


def test_cpu_arena_is_sealed():
    """The fix under the shrink attack, whatever reaches the fd: the memfd's size is sealed."""
    from tritonrl.verify.shared.arena import Arena

    arena = Arena.create(4096, "cpu")
    try:
        for size in (0, 1 << 30):
            with pytest.raises(PermissionError):
                os.ftruncate(arena.fd, size)
    finally:
        arena.close()
