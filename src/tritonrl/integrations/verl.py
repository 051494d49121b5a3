"""verl's batched reward function: a whole generation batch judged in one call, by the service or in-process.

verl (``reward_model.reward_manager=batch``) calls it once per batch with lists::

    custom_reward_function.path=<site-packages>/tritonrl/integrations/verl.py
    custom_reward_function.name=compute_score_batch
    +custom_reward_function.reward_kwargs.url=http://127.0.0.1:8400     # a `tritonrl serve`; omit: in-process

``ground_truth`` names the task: a bundled task's name or its KernelBench source (``extra_info["task"]`` may hold
``KernelTask.to_dict()`` instead). Each sample's answer is ``{"score": reward, "correct": 0/1, "compiled": 0/1,
"infrastructure_failure": 0/1}``: verl takes ``score`` as the reward and logs the rest. The reward is
``tritonrl.common.reward.compute_reward`` of the verdict, as in tritonrl's own training. An item the verifier
could not judge (its judge died twice) scores 0 and is counted in ``infrastructure_failure``, with a warning;
``on_infrastructure_failure="raise"`` stops the step instead. A service that cannot be reached raises, so a
batch is never scored as zeros for the service's sake. The bearer token comes from ``$TRITONRL_SERVE_TOKEN``
(``token_env``). Unlike ``tritonrl.train.reward_adapters.compute_score`` (verl's per-sample API, one candidate at
a time), the whole batch reaches the verifier at once, so its places are all used.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import Any

from tritonrl.common.reward import compute_reward
from tritonrl.config import RewardConfig, VerifyConfig
from tritonrl.tasks.model import KernelTask
from tritonrl.verify import Flag

log = logging.getLogger(__name__)

_VERIFIERS: dict[tuple, Any] = {}
_LOCK = threading.Lock()


def task_for(ground_truth: Any, extra_info: dict | None) -> KernelTask:
    """The task a sample is judged against: ``extra_info["task"]``, KernelBench source, or a bundled name."""
    if extra_info and isinstance(extra_info.get("task"), dict):
        return KernelTask.from_dict(extra_info["task"])
    text = str(ground_truth)
    if "class Model" in text:
        from tritonrl.tasks.levels import classify_level

        name = (extra_info or {}).get("name") or "verl_task"
        return KernelTask(name=str(name), level=classify_level(text), source=text)
    from tritonrl.tasks import load_tasks

    bundled = {t.name: t for t in load_tasks("bundled")}
    if text not in bundled:
        raise ValueError(f"unknown task {text[:60]!r}: ground_truth must be a bundled task's name or a KernelBench "
                         "task's source")
    return bundled[text]


def verifier_for(url: str | None, token_env: str, timeout_s: float, device: str) -> Any:
    """One verifier per (url or device) per process, kept for the run: the service's client, or a local one."""
    key = (url, token_env, timeout_s, device)
    with _LOCK:
        if key not in _VERIFIERS:
            from tritonrl.verify.parent.backends import make_verifier

            config = (VerifyConfig(backend="http", http_url=url, http_token_env=token_env, http_timeout_s=timeout_s)
                      if url else VerifyConfig(device=device))
            from tritonrl.verify.parent.known_good import checked

            _VERIFIERS[key] = checked(make_verifier(config), config, "tritonrl's verl reward")
        return _VERIFIERS[key]


def compute_score_batch(data_sources: Sequence, solution_strs: Sequence[str], ground_truths: Sequence,
                        extra_infos: Sequence | None = None, url: str | None = None,
                        token_env: str = "TRITONRL_SERVE_TOKEN", timeout_s: float = 3600.0, device: str = "auto",
                        on_infrastructure_failure: str = "flag", **_: Any) -> list[dict[str, float]]:
    """verl batch reward: one ``{"score", "correct", "compiled", "infrastructure_failure"}`` per solution."""
    from tritonrl.verify import VerifyItem

    if on_infrastructure_failure not in ("flag", "raise"):
        raise ValueError("on_infrastructure_failure must be 'flag' or 'raise'")
    extras = list(extra_infos) if extra_infos is not None else [None] * len(solution_strs)
    items = [VerifyItem(task_for(truth, extra), completion=text)
             for text, truth, extra in zip(solution_strs, ground_truths, extras, strict=True)]
    results = verifier_for(url, token_env, timeout_s, device).verify_many(items) if items else []
    failed = sum(Flag.VERIFIER_ERROR.value in r.flags for r in results)
    if failed:
        message = f"{failed} of {len(results)} samples not judged: the verifier failed on them (infrastructure)"
        if on_infrastructure_failure == "raise":
            raise RuntimeError(message)
        log.warning("%s; they score 0 and are counted in infrastructure_failure", message)
    reward = RewardConfig()
    return [{"score": float(compute_reward(r, reward)), "correct": float(r.correct), "compiled": float(r.compiled),
             "infrastructure_failure": float(Flag.VERIFIER_ERROR.value in r.flags)} for r in results]
