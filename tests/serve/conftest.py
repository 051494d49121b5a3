"""A real ``tritonrl serve`` service on loopback for the tests: uvicorn in a thread, on a free port.

``served(service)`` starts uvicorn on 127.0.0.1 (port 0: a free one) in a background thread and yields the base
URL; clients are real (httpx over TCP). ``FakeVerifier`` answers at once (or when its gate opens) without any
process, for the protocol's tests; the verdict tests use the real ``Verifier``.
"""

import contextlib
import threading
import time

import pytest

pytest.importorskip("fastapi", reason="the serve extra (pip install 'tritonrl[serve]')")

from tritonrl.config import ServeConfig, ServeRunConfig, VerifyConfig
from tritonrl.serve.service import Service, listening_socket, make_server
from tritonrl.verify import Flag, Stage, VerifyResult


@contextlib.contextmanager
def served(service: Service):
    """``service`` on http://127.0.0.1:<free port>, stopped (drained) at the end."""
    sock = listening_socket("127.0.0.1", 0)
    server = make_server(service, log_level="warning")
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True, name="test-serve")
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert server.started, "the test server did not start"
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(60)
        sock.close()


def serve_config(**serve) -> ServeRunConfig:
    return ServeRunConfig(verify=VerifyConfig(device="cpu"), serve=ServeConfig(**serve))


class FakeVerifier:
    """``verify_many`` without processes: a code or completion starting with "ok" is correct, any other is a
    static rejection; ``gate`` (a threading.Event) holds each batch until set; ``calls`` records batch sizes."""

    concurrency = 2
    device = "cpu"

    def __init__(self, gate: threading.Event | None = None, fail: Exception | None = None):
        self.gate = gate
        self.fail = fail
        self.calls: list[int] = []
        self.seen: list = []

    def verify_many(self, items):
        self.calls.append(len(items))
        self.seen += items
        if self.gate is not None:
            self.gate.wait(30)
        if self.fail is not None:
            raise self.fail
        return [self._one(item) for item in items]

    @staticmethod
    def _one(item) -> VerifyResult:
        text = item.code if item.code is not None else item.completion
        if text.startswith("ok"):
            return VerifyResult(Stage.DONE, valid=True, compiled=True, tiny_correct=True, correct=True,
                                elapsed_s=0.01)
        if text.startswith("dead"):
            return VerifyResult(Stage.COMPILE, valid=True, flags=[Flag.VERIFIER_ERROR.value],
                                error="verifier error (JudgeDied): the judge died twice")
        return VerifyResult(Stage.STATIC, flags=[Flag.NO_TRITON_KERNEL.value], error="no kernel", elapsed_s=0.01)


def fake_service(verifier=None, token=None, **serve) -> Service:
    return Service(serve_config(**serve), verifier=verifier or FakeVerifier(), token=token)
