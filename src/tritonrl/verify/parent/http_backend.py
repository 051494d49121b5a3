"""Verification by a ``tritonrl serve`` service: the ``Verifier`` API, with candidates judged over HTTP.

    from tritonrl.verify.parent.http_backend import HttpVerifier
    config = VerifyConfig(backend="http", http_url="http://127.0.0.1:8400")
    with HttpVerifier(config) as verifier:          # or make_verifier(config)
        results = verifier.verify_many(items)       # same order as items

The service judges with its own settings (device, tolerance, strict ...: ``tritonrl serve``'s), so of this
config only the ``http_*`` keys count. A batch larger than ``http_batch_items`` goes as several requests at once;
the service batches them with other clients' items. A ``429`` (queue full) or ``503`` (the service draining or
starting) is waited out as its ``Retry-After`` says, and a refused connection retried, within ``http_timeout_s``;
after that, or on any other error status, the batch raises: a batch is never scored as zeros for the service's
sake. An item whose judge died twice comes back flagged ``verifier_error`` (``infrastructure_failure`` in the
service's JSON), as from the local verifier. The bearer token, when the service wants one, is read from the
environment variable ``http_token_env`` and sent as ``Authorization: Bearer``; it is never logged.

httpx (``pip install 'tritonrl[serve]'``) is imported when the first ``HttpVerifier`` is built.
"""

from __future__ import annotations

import logging
import os
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from tritonrl.config import VerifyConfig
from tritonrl.errors import ConfigError
from tritonrl.tasks.model import KernelTask
from tritonrl.verify.parent.verifier import VerifyItem
from tritonrl.verify.shared.verdict import VerifyResult

log = logging.getLogger(__name__)

RETRY_STATUSES = (429, 503)  # queue full, draining or starting: come back later
CONNECT_RETRY_S = 1.0  # between attempts while the service cannot be reached


class ServiceError(RuntimeError):
    """The service refused a batch (an error status other than 429/503), or could not be reached in time."""


def import_httpx():
    """The ``httpx`` module, or a one-line ``ConfigError`` saying how to install it."""
    try:
        import httpx
    except ImportError:
        raise ConfigError("verify.backend=http needs httpx: pip install 'tritonrl[serve]'") from None
    return httpx


def item_payload(item: VerifyItem) -> dict[str, Any]:
    """One item as the service reads it: a bundled task by name, any other task by its source."""
    task: KernelTask = item.task
    body: dict[str, Any] = ({"task": task.name} if task.origin == "bundled" and not task.variant
                            else {"task_source": task.source, "task_name": task.name})
    if item.code is not None:
        body["code"] = item.code
    else:
        body["completion"] = item.completion if item.completion is not None else ""
    return body


def result_from_json(data: dict[str, Any]) -> VerifyResult:
    """A verdict of the service as a ``VerifyResult``; its reward is left to the caller, as the local one's is."""
    result = VerifyResult.from_dict(data)
    result.reward = None
    return result


class HttpVerifier:
    """Judges candidates through a ``tritonrl serve`` service at ``config.http_url``."""

    def __init__(self, config: VerifyConfig) -> None:
        if not config.http_url:
            raise ConfigError("verify.backend=http needs verify.http_url: the service's base URL")
        httpx = import_httpx()
        self.config = config
        self.url = config.http_url.rstrip("/")
        headers = {"Accept": "application/json"}
        token = os.environ.get(config.http_token_env, "").strip()
        if token:
            headers["Authorization"] = f"Bearer {token}"
        timeout = httpx.Timeout(config.http_timeout_s, connect=min(30.0, config.http_timeout_s))
        self._http = httpx.Client(base_url=self.url, headers=headers, timeout=timeout)

    # ------------------------------------------------------------ public API (same as Verifier)
    def verify(self, task: KernelTask, code: str | None = None, completion: str | None = None) -> VerifyResult:
        return self.verify_many([VerifyItem(task, completion=completion, code=code)])[0]

    def verify_many(self, items: list[VerifyItem], progress: bool = False) -> list[VerifyResult]:
        """Results in the order of ``items``; requests of ``http_batch_items`` items go out at once."""
        if not items:
            return []
        size = self.config.http_batch_items
        chunks = [items[i:i + size] for i in range(0, len(items), size)]
        deadline = time.monotonic() + self.config.http_timeout_s
        if len(chunks) == 1:
            return self._judge(chunks[0], deadline)
        with ThreadPoolExecutor(max_workers=min(8, len(chunks))) as pool:
            parts = list(pool.map(lambda chunk: self._judge(chunk, deadline), chunks))
        return [result for part in parts for result in part]

    def health(self) -> dict[str, Any]:
        """The service's ``/health`` answer."""
        return self._http.get("/health").json()

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> HttpVerifier:  # noqa: PYI034
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------ one request
    def _judge(self, items: list[VerifyItem], deadline: float) -> list[VerifyResult]:
        body = {"items": [item_payload(item) for item in items],
                "deadline_s": max(1.0, deadline - time.monotonic())}
        data = self._post("/v1/verify", body, deadline)
        results = data.get("results")
        if not isinstance(results, list) or len(results) != len(items):
            raise ServiceError(f"the verifier service at {self.url} answered {len(results or [])} results for "
                               f"{len(items)} items")
        return [result_from_json(r) for r in results]

    def _post(self, path: str, body: dict[str, Any], deadline: float) -> dict[str, Any]:
        """The JSON answer to ``body``, waiting out 429/503 and unreachable spells until ``deadline``."""
        httpx = import_httpx()
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise ServiceError(f"the verifier service at {self.url} did not answer within "
                                   f"verify.http_timeout_s={self.config.http_timeout_s:g} s")
            try:
                response = self._http.post(path, json=body, timeout=httpx.Timeout(left, connect=min(30.0, left)))
            except (httpx.ConnectError, httpx.RemoteProtocolError) as exc:
                log.warning("verifier service at %s unreachable (%s); retrying", self.url, type(exc).__name__)
                time.sleep(min(CONNECT_RETRY_S, max(0.0, left)))
                continue
            except httpx.TimeoutException:
                continue  # the loop's deadline check says so
            if response.status_code == 200:
                return response.json()
            if response.status_code in RETRY_STATUSES:
                wait = _retry_after(response.headers.get("Retry-After"))
                log.info("verifier service at %s answered %d; retrying in %.1f s", self.url,
                         response.status_code, wait)
                time.sleep(min(wait, max(0.0, deadline - time.monotonic())))
                continue
            raise ServiceError(f"the verifier service at {self.url} refused the batch "
                               f"({response.status_code}): {_detail(response)}")


def _retry_after(value: str | None) -> float:
    try:
        return min(60.0, max(0.1, float(value))) if value else 1.0
    except ValueError:
        return 1.0


def _detail(response: Any) -> str:
    try:
        return str(response.json().get("error", response.text))[:500]
    except ValueError:
        return response.text[:500]
