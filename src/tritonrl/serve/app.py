"""The HTTP endpoints (FastAPI): verify, rewards, health, metrics; each request's life from body to answer.

    app = build_app(service)        # tritonrl.serve.service.Service: verifier, batcher, tasks, token, instruments

``POST /v1/verify``  ``{"items": [...], "deadline_s": ...}`` -> ``{"results": [verdict, ...]}``, each verdict the
                     JSON of ``tritonrl verify --json`` (less ``file``) plus ``infrastructure_failure``.
``POST /v1/rewards`` OpenRLHF's remote reward request -> ``{"rewards": [...], "scores": [...], "extra_logs": {...}}``.
``GET /health``      ``{"status": "ok" | "draining", ...}``: queue, places, limits, the bundled tasks' names.
``GET /metrics``     Prometheus text (``tritonrl.serve.instruments``).

A request is answered exactly once: its verdicts (200); a refusal with one line in ``{"error": ...}`` (400 bad
JSON or binary, 401 no or wrong token, 413 too large, 422 a wrong field, an unknown task, an empty batch; 429 queue
full and 503 draining, both with ``Retry-After``; 504 past its deadline). A client that disconnects gets nothing,
and its items still queued are dropped. The body is read up to ``serve.max_body_bytes`` and no further.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

from tritonrl.common.reward import compute_reward
from tritonrl.serve import payload
from tritonrl.serve.auth import authorized
from tritonrl.serve.batcher import Draining, QueueFull, Ticket
from tritonrl.verify import Flag, VerifyResult

Service = Any  # tritonrl.serve.service.Service, which imports this module: config, verifier, batcher, tasks ...

log = logging.getLogger(__name__)


class ClientGone(Exception):
    """The client closed its connection before its answer."""


class DeadlinePassed(Exception):
    """The request's deadline came before its verdicts."""


def build_app(service: Service) -> FastAPI:
    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI):
        dispatcher = asyncio.create_task(service.batcher.run())
        try:
            yield
        finally:
            await service.batcher.idle()
            dispatcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await dispatcher

    app = FastAPI(title="tritonrl verifier", lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None)

    @app.post("/v1/verify")
    async def verify(request: Request) -> Response:
        return await answer(service, request, "/v1/verify", payload.verify_request, verify_reply)

    @app.post("/v1/rewards")
    async def rewards(request: Request) -> Response:
        return await answer(service, request, "/v1/rewards", payload.rewards_request, rewards_reply)

    @app.get("/health")
    async def health() -> Response:
        return JSONResponse(service.health())

    @app.get("/metrics")
    async def metrics(request: Request) -> Response:
        if not authorized(request.headers.get("authorization"), service.token):
            return _error(401, "a bearer token is required (Authorization: Bearer ...)")
        text, content_type = service.instruments.render()
        return Response(text, media_type=content_type)

    return app


async def answer(service: Service, request: Request, endpoint: str, parse: Callable, reply: Callable) -> Response:
    """One request from its body to its one answer; counted in the metrics whatever that answer is."""
    started = time.monotonic()
    status = 500  # a bug of ours: FastAPI answers 500
    try:
        response = await _judged(service, request, parse, reply, started)
        status = response.status_code
        return response
    except ClientGone:
        status = 499  # nginx's "client closed request": what the metrics count when nobody is left to answer
        return Response(status_code=status)
    finally:
        service.instruments.request(endpoint, status, time.monotonic() - started)


async def _judged(service: Service, request: Request, parse: Callable, reply: Callable, started: float) -> Response:
    limits = service.config.serve
    if not authorized(request.headers.get("authorization"), service.token):
        return _error(401, "a bearer token is required (Authorization: Bearer ...)")
    try:
        body = await _body(request, limits.max_body_bytes)
        items, deadline_s = await asyncio.to_thread(parse, body, limits, service.tasks)
        ticket = service.batcher.submit(items)
    except payload.BadRequest as exc:
        return _error(exc.status, str(exc))
    except QueueFull as exc:
        return _error(429, str(exc), {"Retry-After": str(exc.retry_after_s)})
    except Draining as exc:
        return _error(503, str(exc), {"Retry-After": "5"})
    try:
        results = await _wait(service, request, ticket, deadline_s - (time.monotonic() - started))
    except DeadlinePassed:
        return _error(504, f"not judged within the deadline ({deadline_s:g} s); its items not yet started were "
                           "dropped: retry with a longer deadline_s or a smaller batch")
    return JSONResponse(reply(service, items, results))


async def _body(request: Request, limit: int) -> bytes:
    """The body, refused (413) as soon as it is known to pass ``limit`` bytes: by its length, or while it comes."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise payload.BadRequest(413, f"the body has {declared} bytes; at most {limit} (serve.max_body_bytes)")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise payload.BadRequest(413, f"the body passes {limit} bytes (serve.max_body_bytes)")
        chunks.append(chunk)
    return b"".join(chunks)


async def _wait(service: Service, request: Request, ticket: Ticket, seconds: float) -> list[VerifyResult]:
    """The ticket's verdicts; a client that goes away, or a deadline that passes, cancels what is still queued."""
    answer = asyncio.ensure_future(ticket.answer())
    gone = asyncio.ensure_future(_disconnect(request))
    try:
        done, _ = await asyncio.wait({answer, gone}, timeout=max(0.0, seconds), return_when=asyncio.FIRST_COMPLETED)
    finally:
        gone.cancel()
    if answer in done:
        return answer.result()
    service.batcher.cancel(ticket)
    answer.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await answer
    if gone in done:
        log.info("a client went away: %d of its items dropped unjudged", len(ticket.items))
        raise ClientGone
    raise DeadlinePassed


async def _disconnect(request: Request) -> None:
    """Return when the client disconnects (the body was read whole, so the next message is the disconnect)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


def verdict_json(service: Service, item, result: VerifyResult) -> dict[str, Any]:
    """One verdict as ``tritonrl verify --json`` prints it (no ``file``), with its reward and whether it is an
    infrastructure failure (not a judgement of the candidate: count it out, retry it)."""
    if result.reward is None:
        result.reward = compute_reward(result, service.config.reward)
    return {"task": item.task.name, **result.to_dict(),
            "infrastructure_failure": Flag.VERIFIER_ERROR.value in result.flags}


def verify_reply(service: Service, items: list, results: list[VerifyResult]) -> dict[str, Any]:
    return {"results": [verdict_json(service, item, result) for item, result in zip(items, results, strict=True)]}


def rewards_reply(service: Service, items: list, results: list[VerifyResult]) -> dict[str, Any]:
    """OpenRLHF's reply: ``rewards`` (the advantage's input), ``scores`` (0/1 correctness, for its dynamic
    filtering) and ``extra_logs`` (per-sample numbers it logs). An infrastructure failure's reward is 0 and is
    counted in ``extra_logs.infrastructure_failure`` (1.0), so a run's logs show it."""
    verdicts = [verdict_json(service, item, result) for item, result in zip(items, results, strict=True)]
    return {
        "rewards": [float(v["reward"]) for v in verdicts],
        "scores": [1.0 if v["correct"] else 0.0 for v in verdicts],
        "extra_logs": {
            "valid": [1.0 if v["valid"] else 0.0 for v in verdicts],
            "compiled": [1.0 if v["compiled"] else 0.0 for v in verdicts],
            "correct": [1.0 if v["correct"] else 0.0 for v in verdicts],
            "infrastructure_failure": [1.0 if v["infrastructure_failure"] else 0.0 for v in verdicts],
        },
    }


def _error(status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    if status == 401:
        headers = {**(headers or {}), "WWW-Authenticate": "Bearer"}
    return JSONResponse({"error": message}, status_code=status, headers=headers)
