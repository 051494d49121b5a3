"""Study two's shared job machinery (issue 50): the run's paths, the queue of job processes sharing one GPU, the
evaluations with the verifier's digest beside them, re-judging recorded samples, checkpoints and their digests.

A job is a process of ``study2.py`` (``--phase P --job KIND:ARG``), done when ``<jobs>/NAME.json`` exists; the
phases (``study2_calibration``, ``study2_main``) name their jobs in a ``JOBS`` table (kind -> function).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import learning_demo as demo  # noqa: E402  (splits, model, audit, per-task counts)
import learning_demo_gpu as gpu  # noqa: E402  (evaluation on a split, the queue, the detached run)

ENTRY = HERE / "study2.py"
VERIFIER_JSON = "verifier.json"
# the study's sizes, passed on to every job process (defaults: the registered ones; a rehearsal shrinks them)
SIZE_KEYS = ("validation_n", "calib_edge_n", "calib_lr_n", "first_validated", "validation_k", "lr_steps",
             "lr_validation_k", "hidden", "layers", "heads", "kv_heads", "vocab", "torch_threads", "screen_shard",
             "unseen_n", "steps_cap", "heldout_n")


def size_argv(args) -> list[str]:
    return sum(([f"--{k.replace('_', '-')}", str(getattr(args, k))] for k in SIZE_KEYS
                if getattr(args, k, None) is not None), [])


def paths(config) -> dict[str, Path]:
    run = Path(config.run.run_dir)
    tasks = Path(config.data.sft_sources[0]).parent
    named = {name: tasks / name for name in ("sft", "validation", "heldout", "calib_edge", "calib_lr", "stream",
                                             "stream_all", "heldout_pool")}
    return {"run": run, "tasks": tasks, **named, "jobs": run / "jobs", "logs": run / "logs",
            "calibration": run / "calibration", "heldout_runs": run / "heldout_runs.jsonl", "main": run / "main"}


def main_dir(config, *parts: str) -> Path:
    return paths(config)["main"].joinpath(*parts)


def read_json(path: Path, default=None):
    return json.loads(path.read_text()) if path.exists() else default


def tokenizer_digest(config) -> str:
    return hashlib.sha256((Path(config.model.name_or_path) / "tokenizer.json").read_bytes()).hexdigest()


def build_model(config, args) -> Path:
    return demo.build_demo_model(config.model.name_or_path, args.hidden, args.layers, args.heads, args.kv_heads,
                                 config.run.seed, vocab=args.vocab, corpus_dir=paths(config)["sft"])


def validation_eval(config):
    """The config with ``eval.tasks`` naming the validation split: the pipeline's data stage checks eval.tasks, and
    SFT is made the same way in every phase (the calibration never has the held-out split on the machine)."""
    return dataclasses.replace(config, eval=dataclasses.replace(config.eval, tasks=str(paths(config)["validation"])))


def job_sft(config, args, _arg) -> None:
    """The deterministic SFT (a checkpoint every ``run.save_steps``), from a tokenizer built from the SFT set."""
    build_model(config, args)
    gpu.job_sft(validation_eval(config), args, _arg)


# ---------------------------------------------------------------- checkpoints and their digests
def checkpoint(config, step: int | str) -> Path:
    found = dict(demo.sft_checkpoints(paths(config)["run"]))
    if int(step) not in found:
        raise SystemExit(f"study2: no complete SFT checkpoint at step {step}")
    return found[int(step)]


def weights_digest(model_dir: Path) -> str:
    """sha256 of a checkpoint's weight files: the main run re-makes S* and compares."""
    h = hashlib.sha256()
    for path in sorted(model_dir.glob("*.safetensors")):
        h.update(path.name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def share_model(config, run_dir: Path, model: Path) -> None:
    """``run_dir``'s manifest names ``model`` (an SFT checkpoint) as its finished SFT stage, so its RL stage starts
    from exactly that checkpoint."""
    from tritonrl.common.manifest import RunManifest

    manifest = RunManifest(run_dir)
    if (manifest.stage("sft") or {}).get("status") != "done":
        sft = RunManifest(paths(config)["run"]).stage("sft")
        manifest.start("sft")
        manifest.record("sft", model=str(model), tokenizer=sft["outputs"]["tokenizer"],
                        base_model=sft["outputs"]["base_model"])
        manifest.finish("sft", "done")


# ---------------------------------------------------------------- evaluations, their verifier, their counts
def verifier_digest() -> str:
    """sha256 of the code a verdict depends on (the verifier, extraction, tasks and their shapes, the config's
    defaults): two evaluations with the same digest were judged alike."""
    src = HERE.parents[1] / "src" / "tritonrl"
    files = sorted([*(src / "verify").rglob("*.py"), *(src / "tasks").rglob("*.py"), src / "extract.py",
                    src / "config.py", src / "common" / "result_log.py"])
    h = hashlib.sha256()
    for path in files:
        h.update(str(path.relative_to(src)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def evaluated(config, model: str, split: str, out: Path, temperature: str, k: int, tasks_dir: Path | None = None,
              seed: int | None = None) -> None:
    """``learning_demo_gpu.evaluate_on`` on one of this study's splits (or ``tasks_dir``), then the verifier's digest
    beside it. ``seed``: the sampling seed (default ``eval.seed``)."""
    if seed is not None:
        config = dataclasses.replace(config, eval=dataclasses.replace(config.eval, seed=seed))
    out.mkdir(parents=True, exist_ok=True)  # first: a cut-short evaluation's verdicts say which verifier made them
    (out / VERIFIER_JSON).write_text(json.dumps({"verifier": verifier_digest()}) + "\n")
    gpu.evaluate_on(config, model, split, out, temperature, k, tasks_dir=tasks_dir or paths(config)[split])


def counts(path: Path, samples_below: int | None = None) -> dict[str, tuple[int, int]]:
    """Per task (correct, samples) of an evaluation directory; ``samples_below``: only samples 0 .. n-1."""
    if samples_below is None:
        return demo.per_task(path / "results.jsonl")
    out: dict[str, list[int]] = {}
    for line in (path / "results.jsonl").read_text().splitlines():
        row = json.loads(line)
        if row.get("sample", 0) < samples_below:
            c = out.setdefault(row["task"], [0, 0])
            c[0] += bool(row["result"].get("correct"))
            c[1] += 1
    return {t: (c, n) for t, (c, n) in out.items()}


def rejudge(config, out: Path, tasks_dir: Path, split: str) -> None:
    """``out``'s recorded samples judged again by this verifier (no sampling): a verdict made by another verifier is
    never compared with one of this."""
    from tritonrl.common.result_log import Pending
    from tritonrl.evaluation.evaluate import verify_and_report
    from tritonrl.tasks import load_tasks

    tasks = {t.name: t for t in load_tasks(str(tasks_dir))}
    rows = [json.loads(line) for line in (out / "completions.jsonl").read_text().splitlines() if line.strip()]
    pending = [Pending(tasks[r["task"]], r["sample"], completion=r["completion"]) for r in rows]
    verify_and_report(pending, config.verify, out, {"split": split, "rejudged": True}, resume=False)
    (out / VERIFIER_JSON).write_text(json.dumps({"verifier": verifier_digest(), "rejudged": True}) + "\n")


def stale(out: Path, done: bool) -> bool:
    """Whether ``out`` (an evaluation) was judged by another verifier than this one. A done one is re-judged (its
    caller queues a ``rejudge`` job); one cut short keeps its samples and has its verdicts made anew on resume."""
    record = json.loads((out / VERIFIER_JSON).read_text()) if (out / VERIFIER_JSON).exists() else {}
    if record.get("verifier") == verifier_digest():
        return False
    if not done:
        (out / "results.jsonl").unlink(missing_ok=True)
    return done


def subset_in_order(src: Path, dst: Path, names: list[str]) -> None:
    """``learning_demo.subset`` plus ``order.json`` (the names in the order given: the task files sort by name)."""
    demo.subset(src, dst, names)
    (dst / "order.json").write_text(json.dumps(names) + "\n")


def atomic_json(path: Path, value) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(value, indent=1) + "\n")
    tmp.replace(path)


# ---------------------------------------------------------------- the queue on the GPUs' slots
def slot_names(gpus: int, n: int) -> list[str]:
    """``n`` slots a GPU (``GPU#slot``), the GPUs taking turns: the first jobs of a queue (a hold's arms) each get a
    GPU of their own, and every job still trains and samples on one GPU."""
    return [f"{g}#{i}" for i in range(n) for g in range(gpus)]


def burst(slots: list[str], n: int) -> list[str]:
    """At least ``n`` slots over the GPUs of ``slots`` (the evaluations of a hold, which all sample at once)."""
    gpus = len({s.split("#")[0] for s in slots})
    return slot_names(gpus, -(-max(len(slots), n) // gpus))


class Queue(gpu.Queue):
    """``learning_demo_gpu.Queue`` with several slots a GPU (``0#0``, ``1#0``, ``0#1``, ...), this study's jobs (a
    process of ``study2.py --phase PHASE --job NAME``) and the phase's own ``jobs``/``logs`` directories."""

    def __init__(self, config, args, slots: list[str], phase: str, root: Path | None = None):
        self.phase = phase
        super().__init__(config, args, slots)
        if root is not None:  # the main phase keeps its jobs apart from the calibration's
            self.p = {**self.p, "jobs": root / "jobs", "logs": root / "logs"}
            for d in (self.p["jobs"], self.p["logs"]):
                d.mkdir(parents=True, exist_ok=True)

    def start(self, name: str, gpu_slot: str, all_gpus: bool = False) -> None:
        env = {**os.environ, "CUDA_VISIBLE_DEVICES": gpu_slot.split("#")[0], "PYTHONUNBUFFERED": "1"}
        # every job may use every core (four jobs are rarely all verifying); more slots at once (the evaluations'
        # burst, a second GPU's) share them out, about three workers a core in all
        workers = max(2, ((os.cpu_count() or 2) - 2) // max(1, len(self.gpus) // 4))
        argv = [sys.executable, str(ENTRY), "--config", self.args.config, "--phase", self.phase, "--job", name,
                *sum((["--set", s] for s in [*self.args.set, f"verify.workers={workers}"]), []),
                *size_argv(self.args), *(["--rehearsal"] if self.args.rehearsal else []),
                *(["--calibration", self.args.calibration] if getattr(self.args, "calibration", None) else [])]
        demo._log(f"start {name} on slot {gpu_slot}")
        with open(self.p["logs"] / f"{gpu.safe(name)}.log", "a") as log:
            self.running[gpu_slot] = (subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT), name,
                                      time.monotonic())

    def forget(self, name: str) -> None:
        """A done job to be run again (its output is gone with the machine that made it)."""
        (self.p["jobs"] / f"{gpu.safe(name)}.json").unlink(missing_ok=True)


def run_job(config, args, table: dict, name: str) -> None:
    import torch

    torch.set_num_threads(args.torch_threads)
    kind, _, arg = name.partition(":")
    if kind not in table:
        raise SystemExit(f"study2: no job {kind!r} in phase {args.phase}")
    table[kind](config, args, arg)
