"""The real verifier behind the real service on loopback: verdicts over HTTP equal in-process ones (bundled tasks,
the examples' right/TF32/wrong/cheating kernels, hack fixtures, OpenRLHF's format and rewards); a judge killed
mid-batch loses no request; ``tritonrl serve`` drains on SIGTERM. The whole bundled suite and every hack fixture
(runtime and static): ``-m slow``."""

import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from tests.serve.conftest import served
from tests.verify.tasks import TASKS
from tritonrl.common.reward import compute_reward
from tritonrl.config import ServeConfig, ServeRunConfig, VerifyConfig
from tritonrl.serve.service import Service
from tritonrl.tasks import get_task, load_tasks
from tritonrl.verify import Verifier, VerifyItem

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "verify" / "fixtures"
# Hack fixtures cheap on a CPU: caught by the static checks, or at the tiny stage, or a crash; one honest control.
RUNTIME = ("good_relu", "memoization", "os_exit", "decoy_kernel")
STATIC = ("attrgetter_escape", "bias_add_after_kernel", "clean_elementwise")
EXAMPLES = ("l1_relu", "l1_gelu", "l1_matmul", "l1_sigmoid")  # right, cheating, TF32, wrong
SAME = ("stage", "valid", "compiled", "tiny_correct", "correct", "reward")


def verify_config() -> VerifyConfig:
    return VerifyConfig(device="cpu", workers=2, timeout_s=60.0)


def header(path: Path, key: str) -> str | None:
    for line in path.read_text().splitlines():
        if line.startswith(f"# {key}:"):
            return line.split(":", 1)[1].strip()
    return None


def fixture_items(runtime=RUNTIME, static=STATIC) -> list[tuple[str, VerifyItem]]:
    """(label, item): the examples' kernels for their bundled tasks, then hack fixtures for the tests' tasks."""
    items = [(f"examples/{name}", VerifyItem(get_task(name), code=(ROOT / "examples/solutions" / f"{name}.py")
                                             .read_text())) for name in EXAMPLES]
    for name in runtime:
        path = FIXTURES / "runtime" / f"{name}.py"
        items.append((f"runtime/{name}", VerifyItem(TASKS[header(path, "task")], code=path.read_text())))
    for name in static:
        path = FIXTURES / "static" / f"{name}.py"
        items.append((f"static/{name}", VerifyItem(TASKS[header(path, "task") or "relu"], code=path.read_text())))
    return items


def as_json(item: VerifyItem) -> dict:
    from tritonrl.verify.parent.http_backend import item_payload

    return item_payload(item)


def summary(verdict: dict) -> dict:
    return {**{k: verdict[k] for k in SAME}, "flags": sorted(verdict["flags"])}


@pytest.fixture(scope="module")
def service(ref_cache):
    config = ServeRunConfig(verify=verify_config(), serve=ServeConfig(batch_wait_ms=50))
    config.verify.cache_dir = ref_cache
    service = Service(config)
    service.start()
    with served(service) as url:
        service.url = url
        yield service


@pytest.fixture(scope="module")
def ref_cache(tmp_path_factory):
    return str(tmp_path_factory.mktemp("refcache"))


def openrlhf_request() -> tuple[dict, list[VerifyItem]]:
    """An OpenRLHF reward request (query = prompt + response) and the same three items for the verifier."""
    relu, gelu = get_task("l1_relu"), get_task("l1_gelu")
    prompt = "Write ModelNew for this task.\n"
    right = f"```python\n{relu.solution}```"
    fallback = "```python\n" + (ROOT / "examples/solutions/l1_gelu.py").read_text() + "```"
    body = {"query": [prompt + right, prompt + fallback, prompt + "no code at all"], "prompts": [prompt] * 3,
            "labels": ["l1_relu", "l1_gelu", relu.source]}
    return body, [VerifyItem(relu, completion=right), VerifyItem(gelu, completion=fallback),
                  VerifyItem(relu, completion="no code at all")]


def compare(service, labelled: list[tuple[str, VerifyItem]], ref_cache: str) -> None:
    """Each item judged in-process and over HTTP (two concurrent /v1/verify requests and one /v1/rewards, batched
    together) gives one verdict, and OpenRLHF's reply carries the in-process rewards."""
    rewards_body, reward_items = openrlhf_request()
    config = verify_config()
    config.cache_dir = ref_cache
    with Verifier(config) as verifier:
        local = verifier.verify_many([item for _, item in labelled] + reward_items)
    local, local_rewards = local[:len(labelled)], local[len(labelled):]
    expected = {label: summary({**r.to_dict(), "reward": compute_reward(r)}) for (label, _), r in zip(labelled, local)}
    half = len(labelled) // 2
    requests = [("/v1/verify", {"items": [as_json(item) for _, item in labelled[:half]]}),
                ("/v1/verify", {"items": [as_json(item) for _, item in labelled[half:]]}),
                ("/v1/rewards", rewards_body)]
    with ThreadPoolExecutor(3) as pool:
        replies = list(pool.map(lambda r: httpx.post(service.url + r[0], json=r[1], timeout=600), requests))
    assert [r.status_code for r in replies] == [200, 200, 200], [r.text[:300] for r in replies]
    remote = [v for reply in replies[:2] for v in reply.json()["results"]]
    got = {label: summary(v) for (label, _), v in zip(labelled, remote)}
    assert got == expected
    assert not any(v["infrastructure_failure"] for v in remote)
    rewards = replies[2].json()
    assert rewards["rewards"] == [compute_reward(r) for r in local_rewards] == [1.0, 0.0, 0.0]
    assert rewards["scores"] == [1.0, 0.0, 0.0]
    assert rewards["extra_logs"]["infrastructure_failure"] == [0.0, 0.0, 0.0]


def test_verdicts_over_http_equal_in_process_ones(service, ref_cache):
    bundled = [t for t in load_tasks("bundled") if t.name in ("l1_relu", "l1_hardtanh")]
    labelled = [(t.name, VerifyItem(t, code=t.solution)) for t in bundled] + fixture_items()
    compare(service, labelled, ref_cache)


def test_a_judge_killed_mid_batch_loses_no_request(service, caplog):
    caplog.set_level(logging.WARNING)
    verifier = service.verifier
    # a task whose verdict takes a while (a conv under the interpreter), so the kill lands while it is judged
    # (l1_relu's verdicts got fast enough to end before it, and the test then saw no death)
    slow = get_task("l2_conv_maxpool_relu")
    body = {"items": [{"task": slow.name, "code": slow.solution}] * 2}
    with ThreadPoolExecutor(2) as pool:
        replies = [pool.submit(httpx.post, service.url + "/v1/verify", json=body, timeout=600) for _ in range(2)]
        deadline = time.monotonic() + 120
        while not (verifier._in_use.get("cpu") and verifier._judges.get("cpu")):
            assert time.monotonic() < deadline, "no candidate started"
            time.sleep(0.01)
        time.sleep(0.3)  # its sessions open with the judge
        judge = verifier._judges["cpu"]
        os.kill(judge.process.pid, signal.SIGKILL)
        answers = [r.result() for r in replies]
    assert [a.status_code for a in answers] == [200, 200]
    results = [v for a in answers for v in a.json()["results"]]
    assert len(results) == 4
    assert all(v["correct"] and not v["infrastructure_failure"] for v in results), \
        [(v["stage"], v["flags"], v["error"]) for v in results if not v["correct"]]
    assert verifier._judges["cpu"] is not judge, "a fresh judge took over"
    assert "died" in caplog.text and "judging the candidate again" in caplog.text


def test_sigterm_drains_the_requests_in_flight_and_refuses_new_ones(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    env.pop("TRITONRL_SERVE_TOKEN", None)
    process = subprocess.Popen([sys.executable, "-m", "tritonrl", "serve", "--device", "cpu", "--port", "0",
                                "--workers", "2", "--set", f"verify.cache_dir={tmp_path / 'cache'}"],
                               cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = _listening_url(process)
        relu = get_task("l1_relu")
        body = {"items": [{"task": "l1_relu", "code": relu.solution}] * 2 + [{"task": "l1_relu", "code": "x"}]}
        with ThreadPoolExecutor(1) as pool:
            reply = pool.submit(httpx.post, url + "/v1/verify", json=body, timeout=300)
            deadline = time.monotonic() + 60
            while httpx.get(url + "/health").json()["in_flight_items"] == 0:
                assert time.monotonic() < deadline, "the request was not started"
                time.sleep(0.02)
            process.send_signal(signal.SIGTERM)
            refused = _refused_after_sigterm(url)
            answer = reply.result()
        assert answer.status_code == 200, answer.text[:300]
        verdicts = answer.json()["results"]
        assert [v["correct"] for v in verdicts] == [True, True, False]
        assert refused, "a new request was taken while draining"
        assert process.wait(60) == 0
        assert "drained and stopped" in process.stderr.read()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)


def _listening_url(process: subprocess.Popen) -> str:
    holder: dict[str, str] = {}

    def read() -> None:
        for line in process.stdout:
            if "listening on" in line:
                holder["url"] = line.split("listening on ", 1)[1].split()[0]
                return

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(120)
    assert "url" in holder, f"tritonrl serve did not start: {process.poll()}"
    return holder["url"]


def _refused_after_sigterm(url: str) -> bool:
    """Whether a new request, sent once the drain began, was refused (connection refused, or 503)."""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            response = httpx.post(url + "/v1/verify", json={"items": [{"task": "l1_relu", "code": "x"}]}, timeout=5)
        except httpx.TransportError:
            return True
        if response.status_code == 503:
            assert json.loads(response.text)["error"]
            return True
        time.sleep(0.05)  # the signal may not have landed yet
    return False


@pytest.mark.slow
def test_the_bundled_suite_and_every_hack_fixture_over_http_equal_in_process(service, ref_cache):
    bundled = [t for t in load_tasks("bundled") if t.solution]
    runtime = tuple(p.stem for p in sorted((FIXTURES / "runtime").glob("*.py")))
    static = tuple(p.stem for p in sorted((FIXTURES / "static").glob("*.py")))
    labelled = [(t.name, VerifyItem(t, code=t.solution)) for t in bundled] + fixture_items(runtime, static)
    compare(service, labelled, ref_cache)
