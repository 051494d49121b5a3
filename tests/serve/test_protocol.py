"""The service's protocol over real HTTP on loopback, with a verifier that needs no process (fast): bad inputs get
a clear 4xx and the service keeps serving; OpenRLHF's format; batching across requests; the bounded queue (429 +
Retry-After); deadlines (504); a client that goes away loses its queued items; the bearer token; an infrastructure
failure is flagged, never a silent zero; the metrics; the clients (HttpVerifier, verl's batch reward)."""

import json
import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests.serve.conftest import FakeVerifier, fake_service, serve_config, served
from tritonrl.config import ServeRunConfig, VerifyConfig
from tritonrl.errors import ConfigError, UserError
from tritonrl.serve.service import Service
from tritonrl.tasks import get_task
from tritonrl.verify import VerifyItem

RELU_SOURCE = get_task("l1_relu").source
TOKEN = "s3cret-token-for-the-tests-0123456789"


def post(url, path, body, **kwargs):
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    return httpx.post(url + path, content=data, headers={"Content-Type": "application/json",
                                                         **kwargs.pop("headers", {})}, timeout=30, **kwargs)


def ok_items(n, task="l1_relu"):
    return {"items": [{"task": task, "code": f"ok {i}"} for i in range(n)]}


def test_bad_inputs_get_a_clear_4xx_and_the_service_keeps_serving():
    bad = {
        "binary garbage": (b"\x00\xff\xfe\x89PNG\r\n\x1a\n" * 50, 400, "not UTF-8"),
        "malformed JSON": (b'{"items": [', 400, "not valid JSON"),
        "a JSON list": (b"[1, 2]", 400, "JSON object"),
        "oversized body": (json.dumps({"items": [{"task": "l1_relu", "code": "x" * (2 << 20)}]}).encode(), 413,
                           "max_body_bytes"),
        "unknown task": (ok_items(1, task="l9_nope"), 422, "unknown task"),
        "a path as task": (ok_items(1, task="/etc/passwd"), 422, "unknown task"),
        "empty batch": ({"items": []}, 422, "empty"),
        "10,000 items": ({"items": [{"task": "l1_relu", "code": "ok"}] * 10_000}, 413, "at most 1024"),
        "no items key": ({"query": ["x"]}, 422, "'items'"),
        "an item not an object": ({"items": ["ok"]}, 422, "items[0]"),
        "code and completion": ({"items": [{"task": "l1_relu", "code": "ok", "completion": "ok"}]}, 422,
                                "exactly one"),
        "a number as code": ({"items": [{"task": "l1_relu", "code": 5}]}, 422, "code must be a string"),
        "task source not Python": ({"items": [{"task_source": "class Model(:", "code": "ok"}]}, 422,
                                   "not valid Python"),
        "task source not a task": ({"items": [{"task_source": "x = 1", "code": "ok"}]}, 422, "get_inputs"),
        "bad deadline": ({**ok_items(1), "deadline_s": -1}, 422, "deadline_s"),
    }
    verifier = FakeVerifier()
    with served(fake_service(verifier, max_body_bytes=1 << 20)) as url:
        for name, (body, status, words) in bad.items():
            response = post(url, "/v1/verify", body)
            assert response.status_code == status, (name, response.text)
            assert words in response.json()["error"], (name, response.json())
        assert post(url, "/v1/rewards", {"query": ["a"], "labels": []}).status_code == 422
        assert httpx.get(url + "/v1/verify").status_code == 405
        response = post(url, "/v1/verify", ok_items(3))  # still serving
        assert response.status_code == 200
        assert [r["correct"] for r in response.json()["results"]] == [True, True, True]
    assert verifier.calls == [3], "no refused request reached the verifier"


def test_a_task_source_is_judged_and_can_be_switched_off():
    item = {"task_source": RELU_SOURCE, "task_name": "my_relu", "code": "ok"}
    verifier = FakeVerifier()
    with served(fake_service(verifier)) as url:
        (result,) = post(url, "/v1/verify", {"items": [item]}).json()["results"]
        assert result["task"] == "my_relu" and result["correct"]
        assert verifier.seen[0].task.source == RELU_SOURCE
    with served(fake_service(FakeVerifier(), task_sources=False)) as url:
        response = post(url, "/v1/verify", {"items": [item]})
        assert response.status_code == 422 and "bundled task names only" in response.json()["error"]


def test_openrlhf_request_gets_openrlhf_reply():
    prompt = "<|user|>write relu<|assistant|>"
    body = {"query": [prompt + "ok kernel", prompt + "no kernel", "dead judge"], "prompts": [prompt, prompt, ""],
            "labels": ["l1_relu", RELU_SOURCE, "l1_relu"]}
    verifier = FakeVerifier()
    with served(fake_service(verifier)) as url:
        reply = post(url, "/v1/rewards", body).json()
    assert reply["rewards"] == [1.0, 0.0, 0.0]
    assert reply["scores"] == [1.0, 0.0, 0.0]
    assert reply["extra_logs"]["infrastructure_failure"] == [0.0, 0.0, 1.0]
    assert reply["extra_logs"]["correct"] == [1.0, 0.0, 0.0]
    assert [item.completion for item in verifier.seen] == ["ok kernel", "no kernel", "dead judge"]
    assert verifier.seen[1].task.source == RELU_SOURCE


def test_items_of_concurrent_requests_are_judged_together():
    gate = threading.Event()
    verifier = FakeVerifier(gate)
    with served(fake_service(verifier, batches_in_flight=1, max_batch_items=64, batch_wait_ms=50)) as url, \
            ThreadPoolExecutor(4) as pool:
        first = pool.submit(post, url, "/v1/verify", ok_items(1))
        _until(lambda: verifier.calls == [1])  # the first batch holds the verifier
        rest = [pool.submit(post, url, "/v1/verify", ok_items(2)) for _ in range(3)]
        _until(lambda: httpx.get(url + "/health").json()["queue_items"] == 6)
        gate.set()
        answers = [first.result()] + [f.result() for f in rest]
    assert all(a.status_code == 200 for a in answers)
    assert verifier.calls == [1, 6], "the three waiting requests' items went to the verifier as one batch"


def test_a_full_queue_answers_429_with_retry_after_and_loses_nothing_accepted():
    gate = threading.Event()
    verifier = FakeVerifier(gate)
    with served(fake_service(verifier, max_queue_items=4, max_batch_items=2, batches_in_flight=1,
                             batch_wait_ms=0)) as url:
        with ThreadPoolExecutor(2) as pool:
            judged = pool.submit(post, url, "/v1/verify", ok_items(2))  # handed to the verifier, held there
            _until(lambda: verifier.calls == [2])
            queued = pool.submit(post, url, "/v1/verify", ok_items(4))  # the queue is full
            _until(lambda: httpx.get(url + "/health").json()["queue_items"] == 4)
            refused = post(url, "/v1/verify", ok_items(1))
            assert refused.status_code == 429
            assert int(refused.headers["Retry-After"]) >= 1
            assert "queue is full" in refused.json()["error"]
            gate.set()
            assert [len(f.result().json()["results"]) for f in (judged, queued)] == [2, 4]
        assert post(url, "/v1/verify", ok_items(1)).status_code == 200
        too_many = post(url, "/v1/verify", ok_items(5))
        assert too_many.status_code == 413 and "max_queue_items" in too_many.json()["error"]


def test_a_request_past_its_deadline_gets_504_and_its_queued_items_are_dropped():
    gate = threading.Event()
    verifier = FakeVerifier(gate)
    with served(fake_service(verifier, max_batch_items=1, batches_in_flight=1, batch_wait_ms=0)) as url:
        response = post(url, "/v1/verify", {**ok_items(3), "deadline_s": 0.5})
        assert response.status_code == 504 and "deadline" in response.json()["error"]
        assert httpx.get(url + "/health").json()["queue_items"] == 0
        gate.set()
        assert post(url, "/v1/verify", ok_items(1)).status_code == 200
    assert verifier.calls == [1, 1], "of the late request only the item already started was judged"


def test_a_client_that_goes_away_has_its_queued_items_cancelled():
    gate = threading.Event()
    verifier = FakeVerifier(gate)
    with served(fake_service(verifier, max_batch_items=1, batches_in_flight=1, batch_wait_ms=0)) as url:
        with pytest.raises(httpx.ReadTimeout):
            httpx.post(url + "/v1/verify", json=ok_items(5), timeout=httpx.Timeout(1.0))
        _until(lambda: httpx.get(url + "/health").json()["queue_items"] == 0)
        gate.set()
        _until(lambda: httpx.get(url + "/health").json()["in_flight_items"] == 0)
        metrics = httpx.get(url + "/metrics").text
    assert verifier.calls == [1], "only the item already handed over was judged"
    assert 'tritonrl_serve_requests_total{endpoint="/v1/verify",status="499"} 1.0' in metrics


def test_the_bearer_token_is_required_compared_and_never_logged(caplog):
    caplog.set_level(logging.DEBUG)
    with served(fake_service(token=TOKEN)) as url:
        assert post(url, "/v1/verify", ok_items(1)).status_code == 401
        wrong = post(url, "/v1/verify", ok_items(1), headers={"Authorization": "Bearer " + TOKEN[:-1] + "x"})
        assert wrong.status_code == 401 and wrong.headers["WWW-Authenticate"] == "Bearer"
        assert TOKEN not in wrong.text
        right = post(url, "/v1/verify", ok_items(1), headers={"Authorization": f"Bearer {TOKEN}"})
        assert right.status_code == 200
        assert httpx.get(url + "/health").status_code == 200
        assert httpx.get(url + "/metrics").status_code == 401
        assert httpx.get(url + "/metrics", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200
    assert TOKEN not in caplog.text


def test_any_address_but_loopback_needs_a_token(tmp_path, monkeypatch):
    monkeypatch.delenv("TRITONRL_SERVE_TOKEN", raising=False)
    with pytest.raises(UserError, match="needs a bearer token"):
        Service(serve_config(host="0.0.0.0"), verifier=FakeVerifier())
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    token_file.chmod(0o644)
    with pytest.raises(UserError, match="readable by others") as refused:
        Service(serve_config(host="0.0.0.0", token_file=str(token_file)), verifier=FakeVerifier())
    assert TOKEN not in str(refused.value)
    token_file.chmod(0o600)
    assert Service(serve_config(host="0.0.0.0", token_file=str(token_file)), verifier=FakeVerifier()).token == TOKEN
    monkeypatch.setenv("TRITONRL_SERVE_TOKEN", "short")
    with pytest.raises(UserError, match="at least 16"):
        Service(serve_config(host="0.0.0.0"), verifier=FakeVerifier())


def test_a_verifier_failure_is_a_flagged_infrastructure_failure_not_a_silent_zero():
    verifier = FakeVerifier(fail=RuntimeError("the judges are gone"))
    with served(fake_service(verifier)) as url:
        results = post(url, "/v1/verify", ok_items(2)).json()["results"]
        rewards = post(url, "/v1/rewards", {"query": ["ok"], "labels": ["l1_relu"]}).json()
        metrics = httpx.get(url + "/metrics").text
    assert all(r["infrastructure_failure"] and "verifier_error" in r["flags"] for r in results)
    assert all("the judges are gone" in r["error"] and r["reward"] == 0.0 for r in results)
    assert rewards["extra_logs"]["infrastructure_failure"] == [1.0]
    assert "tritonrl_serve_infrastructure_failures_total 3.0" in metrics


def test_metrics_say_queue_in_flight_verdicts_latency_and_busy_time():
    with served(fake_service()) as url:
        post(url, "/v1/verify", {"items": [{"task": "l1_relu", "code": "ok"}, {"task": "l1_relu", "code": "no"}]})
        text = httpx.get(url + "/metrics").text
    for line in ('tritonrl_serve_verdicts_total{correct="true",stage="done"} 1.0',
                 'tritonrl_serve_verdicts_total{correct="false",stage="static"} 1.0',
                 "tritonrl_serve_queue_items 0.0", "tritonrl_serve_in_flight_items 0.0",
                 'tritonrl_serve_requests_total{endpoint="/v1/verify",status="200"} 1.0',
                 'tritonrl_serve_request_seconds_count{endpoint="/v1/verify"} 1.0',
                 "tritonrl_serve_item_seconds_count 2.0", "tritonrl_serve_batch_items_count 1.0",
                 "tritonrl_serve_busy_seconds_total"):
        assert line in text, line


def test_the_http_backend_and_verls_batch_reward_call_the_service(monkeypatch):
    from tritonrl.integrations.verl import compute_score_batch
    from tritonrl.verify.parent.backends import make_verifier
    from tritonrl.verify.parent.http_backend import HttpVerifier, ServiceError

    monkeypatch.setenv("TRITONRL_SERVE_TOKEN", TOKEN)
    verifier = FakeVerifier()
    relu = get_task("l1_relu")
    with served(fake_service(verifier, token=TOKEN)) as url:
        config = VerifyConfig(backend="http", http_url=url, http_batch_items=2)
        with make_verifier(config) as client:
            assert isinstance(client, HttpVerifier)
            results = client.verify_many([VerifyItem(relu, code="ok"), VerifyItem(relu, completion="nope"),
                                          VerifyItem(relu, code="ok again")])
            assert [r.correct for r in results] == [True, False, True]
            assert results[1].flags == ["no_triton_kernel"] and results[0].reward is None
        scores = compute_score_batch(["kb"] * 3, ["ok", "no", "dead"], ["l1_relu", RELU_SOURCE, "l1_relu"],
                                     [None] * 3, url=url)
        assert [s["score"] for s in scores] == [1.0, 0.0, 0.0]
        assert [s["infrastructure_failure"] for s in scores] == [0.0, 0.0, 1.0]
        with pytest.raises(RuntimeError, match="not judged"):
            compute_score_batch(["kb"], ["dead"], ["l1_relu"], url=url, on_infrastructure_failure="raise")
        monkeypatch.setenv("TRITONRL_SERVE_TOKEN", "not-the-token-at-all-000")
        with HttpVerifier(VerifyConfig(backend="http", http_url=url)) as client, \
                pytest.raises(ServiceError, match="401"):
            client.verify(relu, code="ok")
    assert sorted(item.code or item.completion for item in verifier.seen[:3]) == ["nope", "ok", "ok again"]


def test_the_http_backend_waits_out_a_full_queue():
    from tritonrl.verify.parent.http_backend import HttpVerifier

    gate = threading.Event()
    verifier = FakeVerifier(gate)
    relu = get_task("l1_relu")
    with served(fake_service(verifier, max_queue_items=2, max_batch_items=1, batches_in_flight=1,
                             batch_wait_ms=0)) as url, ThreadPoolExecutor(2) as pool:
        first = pool.submit(post, url, "/v1/verify", ok_items(1))  # judged, held
        _until(lambda: verifier.calls == [1])
        second = pool.submit(post, url, "/v1/verify", ok_items(2))  # queued: the queue is full
        _until(lambda: httpx.get(url + "/health").json()["queue_items"] == 2)
        threading.Timer(1.0, gate.set).start()
        with HttpVerifier(VerifyConfig(backend="http", http_url=url, http_timeout_s=60)) as client:
            assert client.verify(relu, code="ok").correct  # 429 first, then judged once the queue has room
        assert first.result().status_code == second.result().status_code == 200


def test_config_rules_for_the_http_backend():
    with pytest.raises(ConfigError, match="http_url"):
        VerifyConfig(backend="http")
    with pytest.raises(ConfigError, match="call a service"):
        ServeRunConfig(verify=VerifyConfig(backend="http", http_url="http://127.0.0.1:1"))


def _until(condition, timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.02)


def test_other_commands_do_not_import_the_web_stack():
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    code = ("import sys; from tritonrl.cli import build_parser; build_parser(); "
            "print(sorted({'fastapi', 'uvicorn', 'starlette', 'httpx', 'prometheus_client'} & set(sys.modules)))")
    done = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": str(root / "src"), "PATH": "/usr/bin:/bin"})
    assert done.stdout.strip() == "[]", done.stdout + done.stderr


class StreamingVerifier(FakeVerifier):
    """Gives each verdict as it is ready (``verify_iter``): "slow" items only once the gate opens."""

    def verify_iter(self, items, stop=None):
        self.calls.append(len(items))
        slow = [k for k, item in enumerate(items) if item.code.startswith("slow")]
        for k, item in enumerate(items):
            if k not in slow:
                yield k, self._one(item)
        self.gate.wait(30)
        for k in slow:
            yield k, self._one(items[k])


def test_a_verdict_reaches_its_request_without_waiting_for_its_batch():
    gate = threading.Event()
    verifier = StreamingVerifier(gate)
    with served(fake_service(verifier, batches_in_flight=1, batch_wait_ms=300)) as url, \
            ThreadPoolExecutor(2) as pool:
        slow = pool.submit(post, url, "/v1/verify", {"items": [{"task": "l1_relu", "code": "slow ok"}]})
        quick = pool.submit(post, url, "/v1/verify", ok_items(1))
        assert quick.result().status_code == 200  # answered while the slow item of its batch is held
        assert not slow.done(), slow.result().text
        assert verifier.calls == [2], verifier.calls
        gate.set()
        assert slow.result().status_code == 200 and len(slow.result().json()["results"]) == 1


def test_a_service_whose_own_verifier_rejects_known_good_kernels_refuses_to_start(monkeypatch):
    """``tritonrl serve`` on a stack where its verifier is broken stops in one line instead of answering every
    client wrongly (``verify.known_good``); a verifier handed in is the caller's to check."""
    from tritonrl.verify import Stage, VerifyResult
    from tritonrl.verify.parent import backends, known_good

    class Broken(FakeVerifier):
        def verify_many(self, items):  # every bundled reference wrongly rejected, as a broken hook does
            return [VerifyResult(Stage.TINY, valid=True, compiled=True, flags=["interpreter_only"], error="broken")
                    for _ in items]

        def close(self):
            pass

    monkeypatch.setattr(known_good, "_PASSED", set())
    monkeypatch.setattr(backends, "make_verifier", lambda config: Broken())
    with pytest.raises(known_good.VerifierBroken, match="^tritonrl serve: the verifier rejects 9 of 9"):
        Service(serve_config()).start()
    Service(serve_config(), verifier=Broken()).start()  # handed in: not checked here
