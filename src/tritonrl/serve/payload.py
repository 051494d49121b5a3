"""What a request to the service may hold, checked before anything is queued: items, tasks, limits.

    items, deadline_s = verify_request(body_bytes, limits, tasks)          # POST /v1/verify
    items, prompts = rewards_request(body_bytes, limits, tasks)            # POST /v1/rewards (OpenRLHF)

``/v1/verify`` takes ``{"items": [{"task": "l1_relu" | "task_source": "<KernelBench source>", "task_name": ...,
"code": ... | "completion": ...}, ...], "deadline_s": 120}``. ``/v1/rewards`` takes OpenRLHF's remote reward
request, ``{"query": [...], "prompts": [...], "labels": [...]}``: a query is the prompt followed by the response
(the completion is what follows the prompt), a label names the task (a bundled name or KernelBench source).

A task is a bundled name or inline source, never a path: no request makes the service read or write a file it
names. Every refusal is a ``BadRequest`` with the status to answer and one line saying what to fix; nothing of
the request is echoed beyond an index and a task name's first characters.
"""

from __future__ import annotations

import ast
import hashlib
import json
import math
import threading
from collections.abc import Mapping
from typing import Any

from tritonrl.config import ServeConfig
from tritonrl.tasks.model import KernelTask
from tritonrl.verify import VerifyItem

TASK_PARTS = ("Model", "get_inputs", "get_init_inputs")  # what a KernelBench task source must define
SOURCES_KEPT = 4096  # task sources parsed and kept (the oldest go first): a client cannot grow it without end


class BadRequest(Exception):
    """A request the service refuses: ``status`` (400, 413, 422) and a one-line reason."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


def parse_json(body: bytes) -> dict[str, Any]:
    """The body as a JSON object, or ``BadRequest`` (400) for binary garbage, bad JSON or another JSON type."""
    try:
        data = json.loads(body.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise BadRequest(400, f"the body is not UTF-8 text (byte {exc.start}); send JSON") from None
    except json.JSONDecodeError as exc:
        raise BadRequest(400, f"the body is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") \
            from None
    if not isinstance(data, dict):
        raise BadRequest(400, f"the body must be a JSON object, not {type(data).__name__}")
    return data


class TaskBook:
    """Tasks by name (the bundled suite) and by source (parsed once, by content). Sources only when allowed."""

    def __init__(self, bundled: Mapping[str, KernelTask], allow_sources: bool):
        self.bundled = dict(bundled)
        self.allow_sources = allow_sources
        self._by_source: dict[str, KernelTask] = {}
        self._lock = threading.Lock()  # requests are parsed in worker threads

    def named(self, name: Any, where: str) -> KernelTask:
        if not isinstance(name, str) or not name:
            raise BadRequest(422, f"{where}: task must be a bundled task's name (a string)")
        task = self.bundled.get(name)
        if task is None:
            shown = name[:60] + ("..." if len(name) > 60 else "")
            raise BadRequest(422, f"{where}: unknown task {shown!r}: not a bundled task (GET /health lists them); "
                                  "send a task's KernelBench source as task_source instead")
        return task

    def from_source(self, source: Any, name: Any, where: str) -> KernelTask:
        if not self.allow_sources:
            raise BadRequest(422, f"{where}: this service takes bundled task names only (serve.task_sources is off)")
        if not isinstance(source, str) or not source.strip():
            raise BadRequest(422, f"{where}: task_source must be the task's Python source (a non-empty string)")
        digest = hashlib.sha256(source.encode()).hexdigest()[:12]
        key = f"{name}\0{digest}"
        with self._lock:
            task = self._by_source.get(key)
        if task is None:
            _check_task_source(source, where)
            from tritonrl.tasks.levels import classify_level

            label = name if isinstance(name, str) and name.strip() else f"task_{digest}"
            task = KernelTask(name=label[:120], level=classify_level(source), source=source)
            with self._lock:
                if len(self._by_source) >= SOURCES_KEPT:
                    self._by_source.pop(next(iter(self._by_source)))
                self._by_source[key] = task
        return task

    def label(self, text: Any, where: str) -> KernelTask:
        """An OpenRLHF label: a bundled name, or KernelBench source (it defines ``class Model``)."""
        if isinstance(text, str) and "class Model" in text:
            return self.from_source(text, None, where)
        return self.named(text, where)


def _check_task_source(source: str, where: str) -> None:
    from tritonrl.util.astlock import parse_source

    try:
        tree = parse_source(source, "<task>")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise BadRequest(422, f"{where}: task_source is not valid Python ({type(exc).__name__})") from None
    defined = {n.name for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef))}
    missing = [name for name in TASK_PARTS if name not in defined]
    if missing:
        raise BadRequest(422, f"{where}: task_source is not a KernelBench task: it does not define "
                              f"{', '.join(missing)}")


def _text(value: Any, field: str, where: str, limits: ServeConfig) -> str:
    if not isinstance(value, str):
        raise BadRequest(422, f"{where}: {field} must be a string")
    if len(value) > limits.max_text_chars:
        raise BadRequest(413, f"{where}: {field} has {len(value)} characters; at most {limits.max_text_chars}")
    return value


def _item_list(data: dict[str, Any], key: str, limits: ServeConfig) -> list:
    items = data.get(key)
    if not isinstance(items, list):
        raise BadRequest(422, f"the body needs {key!r}: a list")
    if not items:
        raise BadRequest(422, f"{key!r} is empty: nothing to judge")
    if len(items) > limits.max_request_items:
        raise BadRequest(413, f"{len(items)} items in one request; at most {limits.max_request_items} "
                              "(serve.max_request_items): split the batch")
    if len(items) > limits.max_queue_items:
        raise BadRequest(413, f"{len(items)} items in one request; the queue holds {limits.max_queue_items} "
                              "(serve.max_queue_items): split the batch")
    return items


def _deadline(data: dict[str, Any], limits: ServeConfig) -> float:
    value = data.get("deadline_s", limits.deadline_s)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise BadRequest(422, "deadline_s must be a positive number of seconds")
    return min(float(value), limits.deadline_s)


def verify_item(raw: Any, index: int, limits: ServeConfig, tasks: TaskBook) -> VerifyItem:
    where = f"items[{index}]"
    if not isinstance(raw, dict):
        raise BadRequest(422, f"{where} must be an object with task (or task_source) and code (or completion)")
    if "task_source" in raw:
        source = _text(raw["task_source"], "task_source", where, limits)
        task = tasks.from_source(source, raw.get("task_name") or raw.get("task"), where)
    else:
        task = tasks.named(raw.get("task"), where)
    if ("code" in raw) == ("completion" in raw):
        raise BadRequest(422, f"{where} needs exactly one of code (a solution's source) and completion "
                              "(a model's text, code extracted from it)")
    if "code" in raw:
        return VerifyItem(task, code=_text(raw["code"], "code", where, limits))
    return VerifyItem(task, completion=_text(raw["completion"], "completion", where, limits))


def verify_request(body: bytes, limits: ServeConfig, tasks: TaskBook) -> tuple[list[VerifyItem], float]:
    """``/v1/verify``: the items to judge, in order, and the request's deadline in seconds."""
    data = parse_json(body)
    items = [verify_item(raw, i, limits, tasks) for i, raw in enumerate(_item_list(data, "items", limits))]
    return items, _deadline(data, limits)


def completion_of(query: str, prompt: str | None) -> str:
    """The response in an OpenRLHF query (prompt + response): what follows the prompt, else the whole query."""
    if prompt:
        at = query.find(prompt)
        if at >= 0:
            return query[at + len(prompt):]
    return query


def rewards_request(body: bytes, limits: ServeConfig, tasks: TaskBook) -> tuple[list[VerifyItem], float]:
    """``/v1/rewards``: one item per query (its completion against its label's task), and the deadline."""
    data = parse_json(body)
    queries = _item_list(data, "query", limits)
    prompts, labels = data.get("prompts"), data.get("labels")
    if prompts is not None and (not isinstance(prompts, list) or len(prompts) != len(queries)):
        raise BadRequest(422, "prompts must be a list as long as query (or left out)")
    if not isinstance(labels, list) or len(labels) != len(queries):
        raise BadRequest(422, "labels must be a list as long as query: each names its task (a bundled task's "
                              "name, or its KernelBench source)")
    items = []
    for i, query in enumerate(queries):
        where = f"query[{i}]"
        text = _text(query, "query", where, limits)
        prompt = prompts[i] if prompts is not None else None
        if prompt is not None and not isinstance(prompt, str):
            raise BadRequest(422, f"prompts[{i}] must be a string")
        label = labels[i]
        if isinstance(label, str):
            _text(label, "label", f"labels[{i}]", limits)
        items.append(VerifyItem(tasks.label(label, f"labels[{i}]"), completion=completion_of(text, prompt)))
    return items, _deadline(data, limits)
