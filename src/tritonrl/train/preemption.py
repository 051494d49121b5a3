"""Pre-emption watcher: polls a cloud metadata endpoint and raises the stop request when a notice appears.

Endpoints (probed when no ``url`` is configured):
  * GCP: ``http://metadata.google.internal/computeMetadata/v1/instance/preempted`` with header
    ``Metadata-Flavor: Google``; the body is ``TRUE`` once the VM is being pre-empted.
  * AWS spot: ``http://169.254.169.254/latest/meta-data/spot/instance-action``; 404 until a stop/terminate
    action is scheduled, then 200 with a JSON body.
A configured ``url`` is treated like AWS (any 200 with a body other than ``FALSE`` is a notice). The stop
request makes the trainer save, the mirror sync and the run exit, exactly as on SIGTERM.
"""

from __future__ import annotations

import urllib.error
import urllib.request

from tritonrl.common.signals import StopRequest
from tritonrl.train.periodic import PeriodicThread

GCP_URL = "http://metadata.google.internal/computeMetadata/v1/instance/preempted"
AWS_URL = "http://169.254.169.254/latest/meta-data/spot/instance-action"
ENDPOINTS: tuple[tuple[str, dict[str, str]], ...] = ((GCP_URL, {"Metadata-Flavor": "Google"}), (AWS_URL, {}))


def notice_at(url: str, headers: dict[str, str], timeout_s: float = 1.0) -> bool:
    """True when ``url`` answers 200 with a body that is not empty and not ``FALSE``."""
    request = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            body = response.read().decode(errors="replace").strip()
            return response.status == 200 and bool(body) and body.upper() != "FALSE"
    except (urllib.error.URLError, OSError, ValueError):
        return False


class PreemptionWatcher(PeriodicThread):
    """Background poller; ``start()`` / ``stop()``. Stops itself once it has raised the request."""

    def __init__(self, request: StopRequest, url: str | None = None, poll_s: float = 5.0):
        super().__init__(self._poll, poll_s, name="tritonrl-preemption", immediately=True)
        self.request = request
        self.endpoints = ((url, {}),) if url else ENDPOINTS
        self.poll_s = poll_s

    def check(self) -> bool:
        return any(notice_at(url, headers) for url, headers in self.endpoints)

    def _poll(self) -> bool:
        if self.check():
            self.request.set("preempted")
            return True
        return False
