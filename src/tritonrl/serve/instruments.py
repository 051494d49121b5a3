"""The service's Prometheus metrics (``GET /metrics``), on a registry of its own.

    instruments = Instruments(device="cuda")
    instruments.verdict(result); instruments.request("/v1/verify", 200, seconds)
    text, content_type = instruments.render()

What they say: ``tritonrl_serve_queue_items`` (items waiting), ``tritonrl_serve_in_flight_items`` (items handed to
the verifier, not yet answered), ``tritonrl_serve_verdicts_total{stage,correct}``,
``tritonrl_serve_infrastructure_failures_total`` (items whose judge died twice, or the verifier failed on),
``tritonrl_serve_requests_total{endpoint,status}``, latency histograms of requests and of each item's verdict,
the batch sizes, and ``tritonrl_serve_busy_seconds_total``: wall seconds during which at least one batch was being
judged (on a GPU service, the time its GPUs had work; its rate is the busy share).
"""

from __future__ import annotations

import threading
import time

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
    generate_latest,
)
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from tritonrl.verify.shared.flags import Flag

SECONDS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 900, 1800)
ITEMS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)


class Instruments:
    def __init__(self, device: str) -> None:
        disable_created_metrics()  # no *_created series: timestamps nobody graphs
        self.registry = registry = CollectorRegistry()
        prefix = "tritonrl_serve_"
        self.queue = Gauge(prefix + "queue_items", "items waiting to be judged", registry=registry)
        self.in_flight = Gauge(prefix + "in_flight_items", "items being judged", registry=registry)
        self.verdicts = Counter(prefix + "verdicts", "verdicts given, by the stage they ended at",
                                ["stage", "correct"], registry=registry)
        self.infrastructure = Counter(prefix + "infrastructure_failures",
                                      "items not judged: the verifier failed on them (a judge died twice)",
                                      registry=registry)
        self.requests = Counter(prefix + "requests", "requests answered, by endpoint and status",
                                ["endpoint", "status"], registry=registry)
        self.request_seconds = Histogram(prefix + "request_seconds", "time from a request's arrival to its answer",
                                         ["endpoint"], buckets=SECONDS, registry=registry)
        self.item_seconds = Histogram(prefix + "item_seconds", "the verifier's time on one item",
                                      buckets=SECONDS, registry=registry)
        self.batch_items = Histogram(prefix + "batch_items", "items per batch handed to the verifier",
                                     buckets=ITEMS, registry=registry)
        self.busy = Counter(prefix + "busy_seconds", "seconds with at least one batch being judged",
                            registry=registry)
        Gauge(prefix + "info", "the service's verifier", ["device"], registry=registry).labels(device).set(1)
        self._lock = threading.Lock()
        self._running = 0
        self._busy_since = 0.0

    def verdict(self, result) -> None:
        self.verdicts.labels(result.stage.value, str(bool(result.correct)).lower()).inc()
        if Flag.VERIFIER_ERROR.value in result.flags:
            self.infrastructure.inc()
        if result.elapsed_s is not None:
            self.item_seconds.observe(result.elapsed_s)

    def request(self, endpoint: str, status: int, seconds: float) -> None:
        self.requests.labels(endpoint, str(status)).inc()
        self.request_seconds.labels(endpoint).observe(seconds)

    def batch_started(self, size: int) -> None:
        self.batch_items.observe(size)
        with self._lock:
            if self._running == 0:
                self._busy_since = time.monotonic()
            self._running += 1

    def batch_ended(self) -> None:
        with self._lock:
            self._running -= 1
            if self._running == 0:
                self.busy.inc(time.monotonic() - self._busy_since)

    def render(self) -> tuple[bytes, str]:
        with self._lock:  # a batch under way counts up to now
            if self._running:
                now = time.monotonic()
                self.busy.inc(now - self._busy_since)
                self._busy_since = now
        return generate_latest(self.registry), CONTENT_TYPE_LATEST
