"""What each process of a multi-process run (``accelerate launch``) does: roles, agreement, its own GPU.

Rules every stage follows (docs/scaling.md, "What each rank does"):
  * files of the run directory (manifest, ``config.json``, ``final/``, ``COMPLETE`` markers, merged samples) are
    written by the main process only, after a barrier where other ranks' work must be finished first;
  * collective steps (gathering sharded weights, agreeing to stop) run on every rank, at the same point;
  * a stop is decided together (``any_rank``): one rank's SIGTERM stops all ranks at the same step;
  * each rank verifies with its own ``Verifier`` on its own GPU (``rank_verifier``), timing exclusively across
    processes (``tritonrl.verify.judge.gpu_lock.CrossProcessGpuLocks``).
Single process: every helper is a no-op or returns its input. The process group is accelerate's
(``PartialState``), the one the Trainer uses.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Sequence
from typing import Any, TypeVar

T = TypeVar("T")


def _state():
    from accelerate import PartialState

    return PartialState()


def world_size() -> int:
    return _state().num_processes


def rank() -> int:
    return _state().process_index


def is_main() -> bool:
    return _state().is_main_process


def barrier() -> None:
    """Every rank waits here until all have arrived (no-op for one process)."""
    _state().wait_for_everyone()


def any_rank(flag: bool) -> bool:
    """True on every rank when ``flag`` is true on at least one: a decision all ranks share."""
    state = _state()
    if state.num_processes == 1:
        return flag
    import torch
    from accelerate.utils import reduce

    total = reduce(torch.tensor([1.0 if flag else 0.0], device=state.device), reduction="sum")
    return bool(total.item() > 0)


def shutdown(clean: bool = True) -> None:
    """End this process's part in a multi-process run: destroy the process group before the interpreter's teardown
    does. Left to the teardown, a rank whose work was all done could abort on a loaded machine (SIGABRT,
    "terminate called without an active exception", seen once in CI): its exit status then reads as a failure.
    ``clean``: every rank got here the same way (a finished or agreed-stopped run), so wait for the others first
    and no rank closes its connections while another still reads from them; after an error, destroy alone.
    Never imports torch: a process that did not use it has no group."""
    dist = sys.modules.get("torch.distributed")
    if dist is None or not dist.is_available() or not dist.is_initialized():
        return
    if clean:
        dist.barrier()
    dist.destroy_process_group()


def gather(values: list[T]) -> list[T]:
    """Every rank's ``values``, concatenated in rank order, on every rank."""
    if world_size() == 1:
        return list(values)
    from accelerate.utils import gather_object

    return list(gather_object(list(values)))


def shard(items: Sequence[T], index: int | None = None, count: int | None = None) -> list[T]:
    """This rank's share of ``items`` (every ``count``-th from ``index``): disjoint, together all of them."""
    index = rank() if index is None else index
    count = world_size() if count is None else count
    return list(items[index::count])


def sharded_launch() -> str | None:
    """``"zero3"`` or ``"fsdp"`` when this launch shards parameters across ranks, else None (DDP, ZeRO-2)."""
    if os.environ.get("ACCELERATE_USE_FSDP", "false").lower() in ("1", "true"):
        return "fsdp"
    if os.environ.get("ACCELERATE_USE_DEEPSPEED", "false").lower() in ("1", "true") and \
            os.environ.get("ACCELERATE_DEEPSPEED_ZERO_STAGE", "") == "3":
        return "zero3"
    return None


def rank_gpu() -> str:
    """The GPU this rank trains on, as ``CUDA_VISIBLE_DEVICES`` names it, so its verifier times on that one.

    accelerate trains local rank k on ``cuda:(k % device_count)``, and with ``CUDA_VISIBLE_DEVICES`` set the
    device count is the length of that list: with one list shared by every rank (``4,5``) rank 1 has its entry 1
    (``5``); with one GPU per process (a scheduler's ``CUDA_VISIBLE_DEVICES=3`` for local rank 1) it has the only
    entry (``3``), never index 1, another rank's GPU. Unset: every GPU is visible, and rank k has GPU k.
    """
    local = _state().local_process_index
    visible = [v.strip() for v in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if v.strip()]
    return visible[local % len(visible)] if visible else str(local)


def rank_verify_config(config: Any) -> Any:
    """The rank's ``VerifyConfig``: one GPU (the rank's own) instead of every GPU of the node; on a CPU, its
    share of the cores unless ``verify.workers`` says how many."""
    if world_size() == 1 or config.backend != "local":
        return config
    from tritonrl.verify.parent.verifier import resolve_device

    if resolve_device(config.device) == "cuda":
        return dataclasses.replace(config, workers=1)
    return dataclasses.replace(config, workers=config.workers or max(1, (os.cpu_count() or 1) // world_size()))


def rank_verifier(config: Any):
    """A verifier for this rank: ``make_verifier`` on the rank's config; on a GPU with several ranks, its slots
    are the rank's own GPU only (``verify.gpus`` = ``[rank_gpu()]``). Timing is exclusive across processes
    (the Verifier's per-GPU file lock), so ranks sharing a node never time on a GPU another rank is timing on.
    A Ray backend runs on its own GPUs.
    """
    from tritonrl.verify.parent.backends import make_verifier

    verify = rank_verify_config(config)
    if world_size() > 1 and verify.gpus is None and verify.device != "cpu":
        verify = dataclasses.replace(verify, gpus=[rank_gpu()])
    from tritonrl.verify.parent.known_good import checked

    return checked(make_verifier(verify), verify, "the reward")  # a reward broken here trains on noise: stop first
