"""The service as a whole: one verifier, one batcher, the endpoints, and uvicorn serving them until SIGTERM.

    service = Service(config)                    # ServeRunConfig: verify, reward, serve
    serve_forever(service, on_listening=print)   # blocks; SIGTERM (or Ctrl-C) drains, then returns

On SIGTERM the service drains: it stops listening (new connections are refused) and answers 503 to any request
that still arrives on an open connection, while every request it already accepted (queued or being judged) gets
its answer; then the verifier is closed. ``serve.drain_s`` bounds the wait; a second signal stops at once.
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Callable
from typing import Any

from tritonrl.config import ServeRunConfig
from tritonrl.serve.app import build_app
from tritonrl.serve.auth import load_token, require_token_off_loopback
from tritonrl.serve.batcher import Batcher
from tritonrl.serve.instruments import Instruments
from tritonrl.serve.payload import TaskBook

log = logging.getLogger(__name__)


class Service:
    """What the endpoints share. ``verifier``: anything with ``verify_many`` (default: ``make_verifier``)."""

    def __init__(self, config: ServeRunConfig, verifier: Any = None, token: str | None = None) -> None:
        from tritonrl.tasks import load_tasks
        from tritonrl.verify.parent.backends import make_verifier

        self.config = config
        self.token = token if token is not None else load_token(config.serve)
        require_token_off_loopback(config.serve, self.token)
        self.verifier = verifier if verifier is not None else make_verifier(config.verify)
        self.owned = verifier is None
        self.device = getattr(self.verifier, "device", config.verify.device)
        self.tasks = TaskBook({t.name: t for t in load_tasks("bundled")}, config.serve.task_sources)
        self.instruments = Instruments(self.device)
        self.batcher = Batcher(self.verifier, config.serve, self.instruments)
        self.app = build_app(self)

    def health(self) -> dict[str, Any]:
        limits = self.config.serve
        return {"status": "draining" if self.batcher.draining else "ok", "device": self.device,
                "queue_items": self.batcher.queued, "in_flight_items": self.batcher.in_flight,
                "concurrency": getattr(self.verifier, "concurrency", None),
                "limits": {"max_body_bytes": limits.max_body_bytes, "max_request_items": limits.max_request_items,
                           "max_queue_items": limits.max_queue_items, "max_text_chars": limits.max_text_chars,
                           "deadline_s": limits.deadline_s},
                "task_sources": limits.task_sources, "tasks": sorted(self.tasks.bundled)}

    def start(self) -> None:
        """Start the verifier's processes now (a local one's zygote and judges), so the first request is warm; one
        made here first judges the known-good kernels (``verify.known_good``): a service broken on this machine's
        stack refuses to start rather than answer every client wrongly."""
        start = getattr(self.verifier, "start", None)
        if start is not None:
            start(wait=True)
        from tritonrl.verify.parent.known_good import check_known_good, wanted

        if self.owned and wanted(self.config.verify):
            check_known_good(self.verifier, "tritonrl serve")

    def close(self) -> None:
        close = getattr(self.verifier, "close", None)
        if close is not None:
            close()


def listening_socket(host: str, port: int) -> socket.socket:
    """A bound, listening TCP socket (port 0: any free one), IPv6 when ``host`` is an IPv6 address."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host.strip("[]"), port))
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def make_server(service: Service, **uvicorn_options: Any):
    """A uvicorn server for ``service.app`` whose first SIGTERM/SIGINT starts the drain (``Batcher.draining``)."""
    import uvicorn

    class DrainingServer(uvicorn.Server):
        """uvicorn's server, but the signal is not raised again once the drain is over (uvicorn's default ends
        the process by it, before the verifier is closed), and a second signal of either kind stops at once."""

        def handle_exit(self, sig: int, frame: Any) -> None:
            if self.should_exit:
                self.force_exit = True
                return
            log.warning("signal %d: draining: no new requests; answering the %d items accepted", sig,
                        service.batcher.queued + service.batcher.in_flight)
            service.batcher.draining = True
            self.should_exit = True

    options = {"log_level": "info", "access_log": False, "server_header": False,
               "timeout_graceful_shutdown": service.config.serve.drain_s, "lifespan": "on", **uvicorn_options}
    return DrainingServer(uvicorn.Config(service.app, **options))


def serve_forever(service: Service, on_listening: Callable[[str], None] | None = None) -> None:
    """Serve until a signal, then drain; the verifier is closed on the way out."""
    limits = service.config.serve
    sock = None
    try:
        sock = listening_socket(limits.host, limits.port)
        host, port = sock.getsockname()[:2]
        url = f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"
        server = make_server(service)
        if on_listening is not None:
            on_listening(url)
        server.run(sockets=[sock])
    finally:
        if sock is not None:
            sock.close()
        service.close()
