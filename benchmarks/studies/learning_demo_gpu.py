"""The learning demonstration on several GPUs (issue 37): one SFT, then two GRPO seeds and their two matched controls
side by side, one GPU each, judged by the pre-registered criterion (``learning_demo_criterion.py``).

    # here, on the CPU, before any device call: the splits, the tokenizer, the length audit (``--prepare``)
    python benchmarks/studies/learning_demo_gpu.py --config configs/demo4.yaml --prepare
    # on the GPU host, the same command in every call until it prints "done": it starts the run in its own process
    # session (it outlives the call while the machine is held), waits up to --wait-s, and copies what exists to --out
    python benchmarks/studies/learning_demo_gpu.py --config configs/demo4.yaml --gpus 0,1,2,3 --wait-s 540 --out $OUT

The run is a queue of jobs, each a process of this file (``--job NAME``) on one GPU, resumable and marked done in
``<run_dir>/jobs/NAME.json`` (wall seconds, GPU): ``sft``; ``val:STEP`` (each SFT checkpoint on the validation split,
started as the checkpoint lands); ``valtemp:greedy`` and ``valtemp:0.6`` (the chosen checkpoint at the other
decoding temperatures); ``pool:I`` (SFT's samples of the RL prompt pool, to keep the prompts at the edge of its
competence); ``arm:grpo_s0`` .. ``arm:control_s1``; ``heldout:MODEL@TEMP`` and ``turns:grpo_s0`` (the held-out
split, only after every arm has trained); ``timed`` (correct held-out kernels timed on the GPUs). Between them the
host picks SFT's checkpoint and temperature and the RL pool. A job that fails is run again (it resumes) up to
twice. A lost machine loses what was not copied to ``--out``: the next machine starts again from the carried data.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
import random
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import learning_demo as demo  # noqa: E402  (the CPU recipe's data, model, audit and summary pieces)
import learning_demo_criterion as crit  # noqa: E402

ARMS = ("grpo_s0", "grpo_s1", "control_s0", "control_s1")
TEMPERATURES = {"greedy": 0.0, "0.6": 0.6, "1.0": 1.0}
EVAL_TEMPERATURE = "1.0"  # pre-registered (docs/results.md): the evaluation temperature is 1.0, top_p 0.95
SUMMARY_GRACE_S = 60  # a device call waits this long past its budget for a summary being written
DONE_FILE = "DONE.json"


# ---------------------------------------------------------------- settings of the study (the config holds the rest)
def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--config", required=True)
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="config override")
    p.add_argument("--prepare", action="store_true", help="on the CPU: splits, tokenizer and length audit, then exit")
    p.add_argument("--gpus", default=None, help="comma-separated GPU ids to run on (the run itself)")
    p.add_argument("--wait-s", type=float, default=540.0, help="wait this long for the run, then copy and return")
    p.add_argument("--out", default=None, help="copy the results here (a device call's $OUT) before returning")
    p.add_argument("--job", default=None, help=argparse.SUPPRESS)  # one job, in its own process
    p.add_argument("--foreground", action="store_true", help="run the queue in this process (tests, debugging)")
    p.add_argument("--summarize-only", action="store_true", help="the summary of what the run directory holds")
    p.add_argument("--sweep", default=None, metavar="LR,LR,...",
                   help="a direction check: after SFT, GRPO seed 0 at each learning rate (one a GPU), each measured "
                        "on the validation split against SFT (sweep.json); nothing touches the held-out split")
    p.add_argument("--stop-after", choices=("sft", "rl"), default=None,
                   help="a tuning run: stop after this phase (nothing touches the held-out split)")
    p.add_argument("--measure", default=None, metavar="JSON",
                   help="on a GPU: measure generation, updates and verification at this config's sizes, write JSON")
    g = p.add_argument_group("the study (recorded in the summary)")
    g.add_argument("--train-dir", default=None, help="--prepare: the generated train split (default: tasks/train_all)")
    g.add_argument("--pool-dir", default=None, help="--prepare: the generated held-out pool (default: tasks/heldout_pool)")
    g.add_argument("--sft-n", type=int, default=3000, help="SFT set: train tasks taken round-robin over families")
    g.add_argument("--validation-n", type=int, default=96, help="validation tasks (whole op combinations)")
    g.add_argument("--validation-k", type=int, default=4, help="samples a validation task")
    g.add_argument("--heldout-k", type=int, default=8, help="samples a held-out task at a sampled temperature")
    g.add_argument("--turns-k", type=int, default=2, help="trajectories a held-out task in the multi-turn report")
    g.add_argument("--pool-k", type=int, default=4, help="SFT samples an RL pool prompt (0: no edge filter)")
    g.add_argument("--pool-max", type=int, default=1600, help="RL pool prompts sampled for the edge filter")
    g.add_argument("--timed-per-arm", type=int, default=32, help="correct held-out kernels timed per arm")
    g.add_argument("--hidden", type=int, default=512)
    g.add_argument("--layers", type=int, default=8)
    g.add_argument("--heads", type=int, default=8)
    g.add_argument("--kv-heads", type=int, default=4)
    g.add_argument("--vocab", type=int, default=4000)
    g.add_argument("--torch-threads", type=int, default=4, help="torch threads per job process")
    return p.parse_args(argv)


def load(args):
    from tritonrl.config import PipelineConfig, load_config

    return load_config(args.config, args.set, schema=PipelineConfig)


def paths(config) -> dict[str, Path]:
    run = Path(config.run.run_dir)
    tasks = Path(config.data.sft_sources[0]).parent  # the splits sit side by side (--prepare writes them)
    return {"run": run, "tasks": tasks, "sft": Path(config.data.sft_sources[0]), "rl": tasks / "rl",
            "rl_edge": run / "rl_edge", "validation": tasks / "validation", "heldout": Path(config.eval.tasks),
            "jobs": run / "jobs", "logs": run / "logs", "heldout_runs": run / "heldout_runs.jsonl"}


# ---------------------------------------------------------------- --prepare (CPU, before any device call)
def prepare(config, args) -> dict:
    """The four splits from the generated train split and held-out pool, the model's tokenizer (built here to
    audit lengths; the device builds the same one from the same data), and ``length_audit.json``."""
    p = paths(config)
    train = Path(args.train_dir or p["tasks"] / "train_all")
    pool = Path(args.pool_dir or p["tasks"] / "heldout_pool")
    for d in (train, pool):
        if not (d / "generation_report.json").exists():
            raise SystemExit(f"learning_demo_gpu: {d} is not a finished generated split (tritonrl tasks generate)")
    rows = demo.read_rows(train)
    sft = demo.stratified(rows, args.sft_n)
    chosen = {r["name"] for r in sft}
    demo.subset(train, p["sft"], sorted(chosen))
    demo.subset(train, p["rl"], [r["name"] for r in rows if r["name"] not in chosen])
    held, val = demo.split_by_signature(demo.read_rows(pool), args.validation_n)
    demo.subset(pool, p["validation"], [r["name"] for r in val])
    demo.subset(pool, p["heldout"], [r["name"] for r in held])
    build_model(config, args)
    audit = demo.audit_lengths(config, {s: p[s] for s in ("sft", "rl", "validation", "heldout")})
    (p["run"] / "length_audit.json").write_text(json.dumps(audit, indent=1) + "\n")
    counts = {s: len(demo.read_rows(p[s])) for s in ("sft", "rl", "validation", "heldout")}
    signatures = {s: {r["signature"] for r in demo.read_rows(p[s])} for s in counts}
    overlap = {f"{a}&{b}": len(signatures[a] & signatures[b])
               for a, b in (("heldout", "validation"), ("heldout", "sft"), ("heldout", "rl"), ("validation", "sft"),
                            ("validation", "rl"))}
    if any(overlap.values()):
        raise SystemExit(f"learning_demo_gpu: splits share op combinations: {overlap}")
    report = {"tasks": counts, "op_combinations": {s: len(v) for s, v in signatures.items()},
              "shared_op_combinations": overlap, "lengths": audit["splits"]}
    (p["run"] / "prepare.json").write_text(json.dumps(report, indent=1) + "\n")
    return report


def build_model(config, args) -> Path:
    return demo.build_demo_model(config.model.name_or_path, args.hidden, args.layers, args.heads, args.kv_heads,
                                 config.run.seed, vocab=args.vocab, corpus_dir=paths(config)["sft"])


# ---------------------------------------------------------------- one job, in its own process on one GPU
def run_job(config, args, name: str) -> None:
    kind, _, arg = name.partition(":")
    import torch

    torch.set_num_threads(args.torch_threads)
    {"sft": job_sft, "val": job_val, "valtemp": job_valtemp, "pool": job_pool, "arm": job_arm,
     "heldout": job_heldout, "turns": job_turns, "timed": job_timed, "sweepval": job_sweepval}[kind](config, args, arg)


def job_sweepval(config, args, arm: str) -> None:
    """A sweep arm on the validation split (a direction check: train and validation data only)."""
    evaluate_on(config, model_spec(config, arm), "validation", paths(config)["run"] / "sweep" / arm,
                EVAL_TEMPERATURE, args.validation_k)


def job_sft(config, args, _arg) -> None:
    from tritonrl.pipeline import run_pipeline

    build_model(config, args)
    pipeline = dataclasses.replace(config.pipeline, stages=["data", "sft"], eval_models=["base"])
    run_pipeline(dataclasses.replace(config, pipeline=pipeline), log=demo._log)


def evaluate_on(config, model: str, split: str, out: Path, temperature: str, k: int, turns: int = 1,
                tasks_dir: Path | None = None) -> None:
    from tritonrl.evaluation.evaluate import evaluate
    from tritonrl.tasks import load_tasks

    gen = dataclasses.replace(config.eval, temperature=TEMPERATURES[temperature], turns=turns,
                              k=1 if temperature == "greedy" else k)
    tasks = load_tasks(str(tasks_dir or paths(config)[split]))
    evaluate(model, tasks, gen.k, gen, config.verify, out, meta={"split": split, "temperature": temperature},
             resume=True)
    (out / DONE_FILE).write_text(json.dumps({"split": split, "temperature": temperature, "k": gen.k,
                                             "model": model, "turns": turns}) + "\n")


def job_val(config, args, step: str) -> None:
    model = dict((str(s), str(path)) for s, path in checkpoints(config))[step]
    evaluate_on(config, model, "validation", paths(config)["run"] / "validation" / f"sft-step-{step}",
                EVAL_TEMPERATURE, args.validation_k)


def job_valtemp(config, args, temperature: str) -> None:
    evaluate_on(config, chosen_sft(config), "validation",
                paths(config)["run"] / "validation" / f"sft@{temperature}", temperature, args.validation_k)


def job_pool(config, args, shard: str) -> None:
    index, count = (int(x) for x in shard.split("of"))
    names = pool_sample(config, args)[index::count]
    out = paths(config)["run"] / "pool" / f"shard{index}of{count}"
    subset_dir = out / "tasks"
    if not (subset_dir / "tasks.jsonl").exists():
        demo.subset(paths(config)["rl"], subset_dir, names)
    evaluate_on(config, chosen_sft(config), "rl", out, EVAL_TEMPERATURE, args.pool_k, tasks_dir=subset_dir)


def pool_sample(config, args) -> list[str]:
    rows = demo.read_rows(paths(config)["rl"])
    names = sorted(r["name"] for r in rows)
    random.Random(f"pool:{config.run.seed}").shuffle(names)
    return sorted(names[: args.pool_max])


def arm_config(config, arm: str):
    """GRPO (``grpo_sN``) or its control (``control_sN``: rewards shuffled within groups) from the chosen SFT model,
    with seed N, in ``<run_dir>/arms/ARM``, on the edge-of-competence pool when there is one."""
    seed = int(arm.rsplit("_s", 1)[1])
    lr = float(arm[2:].split("_s")[0]) if arm.startswith("lr") else config.rl.learning_rate  # a sweep's arm
    run_dir = paths(config)["run"] / "arms" / arm
    demo.share_sft(paths(config)["run"], run_dir)
    source = paths(config)["rl_edge"] if (paths(config)["rl_edge"] / "tasks.jsonl").exists() else paths(config)["rl"]
    rl = dataclasses.replace(config.rl, shuffle_rewards=arm.startswith("control"), init_from="sft", learning_rate=lr)
    return dataclasses.replace(config, rl=rl, data=dataclasses.replace(config.data, source=str(source)),
                               run=dataclasses.replace(config.run, run_dir=str(run_dir), seed=seed))


def job_arm(config, args, arm: str) -> None:
    from tritonrl.pipeline import run_pipeline

    cfg = arm_config(config, arm)
    pipeline = dataclasses.replace(cfg.pipeline, stages=["rl"], eval_models=["base"])
    run_pipeline(dataclasses.replace(cfg, pipeline=pipeline), log=demo._log)


def model_spec(config, label: str) -> str:
    from tritonrl.common.stages import stage_name

    if label == "sft":
        return chosen_sft(config)
    return f"{paths(config)['run'] / 'arms' / label}:{stage_name(config.rl.algo)}"


def job_heldout(config, args, what: str) -> None:
    label, _, temperature = what.partition("@")
    out = paths(config)["run"] / "heldout" / what
    evaluate_on(config, model_spec(config, label), "heldout", out, temperature, args.heldout_k)
    record_heldout(config, what, out)


def job_turns(config, args, label: str) -> None:
    out = paths(config)["run"] / "heldout" / f"turns3_{label}"
    evaluate_on(config, model_spec(config, label), "heldout", out, EVAL_TEMPERATURE, args.turns_k, turns=3)
    record_heldout(config, f"turns3_{label}", out)


def record_heldout(config, what: str, out: Path) -> None:
    """Every held-out evaluation is appended to ``heldout_runs.jsonl`` (none can be dropped)."""
    counts = demo.per_task(out / "results.jsonl")
    row = {"run": what, "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
           "commit": demo._commit(), "tasks": len(counts), "samples": sum(n for _, n in counts.values()),
           "correct_at_1": sum(c / n for c, n in counts.values()) / len(counts), "results": str(out)}
    with open(paths(config)["heldout_runs"], "a") as fh:
        fh.write(json.dumps(row) + "\n")


def job_timed(config, args, _arg) -> None:
    """Each model's correct held-out kernels (one a task, ``--timed-per-arm`` tasks drawn with a seed) timed on
    every GPU of this job; ``timed/MODEL.jsonl`` holds (task, speedup, runtimes, flags)."""
    from tritonrl.tasks import load_tasks
    from tritonrl.verify import Verifier, VerifyItem

    tasks = {t.name: t for t in load_tasks(str(paths(config)["heldout"]))}
    out = paths(config)["run"] / "timed"
    out.mkdir(parents=True, exist_ok=True)
    verify = dataclasses.replace(config.verify, device="cuda", timing=True, workers=0, gpus=None,
                                 workers_per_gpu=8, timeout_s=120)
    with Verifier(verify) as verifier:
        for label in ("reference", "sft", *ARMS):
            path = out / f"{label}.jsonl"
            if path.exists():
                continue
            picked = (reference_kernels(tasks, args.timed_per_arm) if label == "reference" else
                      correct_kernels(paths(config)["run"] / "heldout" / f"{label}@{EVAL_TEMPERATURE}",
                                      args.timed_per_arm))
            results = verifier.verify_many([VerifyItem(tasks[name], code=code) for name, code in picked])
            rows = [{"task": name, "correct": r.correct, "speedup": r.speedup, "runtime_ms": r.runtime_ms,
                     "ref_runtime_ms": r.ref_runtime_ms, "flags": list(r.flags or [])}
                    for (name, _), r in zip(picked, results)]
            path.write_text("".join(json.dumps(row) + "\n" for row in rows))


def reference_kernels(tasks: dict, n: int) -> list[tuple[str, str]]:
    """(task, code) of ``n`` tasks' own Triton references (drawn with a fixed seed): what a hand-written kernel
    gains at these shapes, beside what each arm's kernels gain."""
    return [(name, tasks[name].solution) for name in seeded_sample(tasks, n)]


def correct_kernels(eval_dir: Path, n: int) -> list[tuple[str, str]]:
    """(task, code) of the first correct sample of up to ``n`` tasks (drawn with a fixed seed)."""
    first: dict[str, str] = {}
    for line in (eval_dir / "results.jsonl").read_text().splitlines():
        row = json.loads(line)
        if row["result"].get("correct") and row["task"] not in first and row.get("code"):
            first[row["task"]] = row["code"]
    return [(name, first[name]) for name in seeded_sample(first, n)]


def seeded_sample(names, n: int) -> list[str]:
    """Up to ``n`` of ``names``, drawn with a fixed seed, in sorted order."""
    names = sorted(names)
    random.Random(0).shuffle(names)
    return sorted(names[:n])


# ---------------------------------------------------------------- the host's decisions between jobs
def check_references(config, n: int = 16) -> None:
    """Before any RL step: the verifier, as the reward runs it here, accepts ``n`` RL-pool references. If it does
    not, every reward would be wrong (a broken interpreter on this machine's triton, say): stop, before anything
    touches the held-out split."""
    from tritonrl.tasks import load_tasks
    from tritonrl.verify import Verifier, VerifyItem

    out = paths(config)["run"] / "reference_check.json"
    if out.exists():
        return
    tasks = load_tasks(str(paths(config)["rl"]))[:n]
    with Verifier(config.verify) as verifier:
        results = verifier.verify_many([VerifyItem(t, code=t.solution) for t in tasks])
    failed = [{"task": t.name, "stage": str(r.stage), "error": (r.error or "")[:300]}
              for t, r in zip(tasks, results) if not r.correct]
    if failed:
        raise SystemExit(f"learning_demo_gpu: the verifier rejected {len(failed)} of {n} references; the reward "
                         f"would be wrong. First: {failed[0]}")
    out.write_text(json.dumps({"references": n, "accepted": n}) + "\n")
def checkpoints(config) -> list[tuple[int, Path]]:
    return demo.sft_checkpoints(paths(config)["run"])


def chosen_sft(config) -> str:
    return json.loads((paths(config)["run"] / "sft_selection.json").read_text())["chosen"]["model"]


def select_sft(config) -> dict:
    """SFT's length: the checkpoint with the best validation correct@1 at the evaluation temperature (ties: the
    shorter); the run's manifest then names it as the SFT model every arm starts from."""
    from tritonrl.common.manifest import RunManifest

    p = paths(config)
    scores = []
    for step, path in checkpoints(config):
        rates = crit.task_rates(demo.per_task(p["run"] / "validation" / f"sft-step-{step}" / "results.jsonl"))
        scores.append({"step": step, "model": str(path), "correct_at_1": sum(rates.values()) / len(rates)})
    best = max(scores, key=lambda r: (r["correct_at_1"], -r["step"]))
    after = sum(s["step"] > best["step"] for s in scores)
    RunManifest(p["run"]).record("sft", model=best["model"])
    selection = {"scores": scores, "chosen": best, "checkpoints_after_best": after}
    (p["run"] / "sft_selection.json").write_text(json.dumps(selection, indent=1) + "\n")
    demo._log(f"SFT chosen on validation: step {best['step']} (correct@1 {best['correct_at_1']:.3f}; "
              f"{after} checkpoints after it)")
    return selection


def pick_temperature(config) -> dict:
    p = paths(config)
    step = json.loads((p["run"] / "sft_selection.json").read_text())["chosen"]["step"]
    dirs = {"greedy": p["run"] / "validation" / "sft@greedy", "0.6": p["run"] / "validation" / "sft@0.6",
            "1.0": p["run"] / "validation" / f"sft-step-{step}"}
    scores = {}
    for name, d in dirs.items():
        rates = crit.task_rates(demo.per_task(d / "results.jsonl"))
        scores[name] = sum(rates.values()) / len(rates)
    choice = {"validation_correct_at_1": scores, "best": crit.best_temperature(scores)}
    (p["run"] / "decoding.json").write_text(json.dumps(choice, indent=1) + "\n")
    demo._log(f"SFT's best decoding temperature on validation: {choice['best']} ({scores})")
    return choice


def edge_pool(config, args, shards: int) -> dict:
    """RL prompts at the edge of SFT's competence: the sampled pool tasks with some but not all of SFT's samples
    correct (train data only). Too few (under 64): the whole pool, and the summary says so."""
    p = paths(config)
    counts: dict[str, tuple[int, int]] = {}
    for i in range(shards):
        counts.update(demo.per_task(p["run"] / "pool" / f"shard{i}of{shards}" / "results.jsonl"))
    edge = sorted(t for t, (c, n) in counts.items() if 0 < c < n)
    report = {"sampled": len(counts), "k": args.pool_k, "edge": len(edge),
              "all_correct": sum(c == n for c, n in counts.values()), "none_correct": sum(c == 0 for c, _ in counts.values())}
    if len(edge) >= 64:
        demo.subset(p["rl"], p["rl_edge"], edge)
        report["used"] = "edge"
    else:
        report["used"] = "whole pool (too few edge prompts)"
    (p["run"] / "rl_pool.json").write_text(json.dumps(report, indent=1) + "\n")
    demo._log(f"RL pool: {report}")
    return report


# ---------------------------------------------------------------- measure, then plan (the recipe sized to the hold)
def measure(config, args, n_verify: int = 256) -> dict:
    """On the device, before the run: seconds per generated token at the RL and evaluation batches (the real model
    size, random weights: the cost does not depend on the weights), per SFT and GRPO update, and per verified
    candidate with ``verify.workers`` interpreter workers (RL-pool references, which run every trial, and copies
    cut in half, which fail early: train data only)."""
    import torch

    from tritonrl.tasks import load_tasks
    from tritonrl.verify import Verifier, VerifyItem

    start = time.monotonic()
    build_model(config, args)
    build_s = time.monotonic() - start
    audit = demo.audit_lengths(config, {s: paths(config)[s] for s in ("sft", "rl")})
    m = demo.measure(dataclasses.replace(config, run=dataclasses.replace(config.run, torch_threads=args.torch_threads)),
                     audit, tokens=64)
    eval_seqs = config.eval.batch_size * config.eval.k
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(config.model.name_or_path).to("cuda")
    ids = torch.randint(10, 1000, (eval_seqs, audit["splits"]["rl"]["prompt_max"]), device="cuda")
    with torch.no_grad():
        for _ in range(2):
            t0 = time.monotonic()
            model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=64, min_new_tokens=64,
                           do_sample=True)
            per_token = (time.monotonic() - t0) / 64
    m["gen_s_per_token_eval_batch"] = per_token  # the eval batch as evaluation runs it: batch_size prompts x k
    tasks = load_tasks(str(paths(config)["rl"]))[: n_verify // 2]
    items = [VerifyItem(t, code=t.solution) for t in tasks] + \
            [VerifyItem(t, code=t.solution[: len(t.solution) // 2]) for t in tasks]
    with Verifier(config.verify) as verifier:
        verifier.verify_many(items[:4])  # the zygote and the first compilations: paid once per job
        t0 = time.monotonic()
        results = verifier.verify_many(items)
        m["verify_s_per_completion"] = (time.monotonic() - t0) / len(items)
    starts = sorted(sum(r.timing["stage_s"]["child_start"].values()) for r in results if r.timing
                    and isinstance(r.timing.get("stage_s", {}).get("child_start"), dict))
    m["child_start_s_median"] = starts[len(starts) // 2] if starts else None
    m.update({"verify_workers": config.verify.workers, "verified": len(items),
              "references_correct": sum(r.correct for r in results[: len(tasks)]), "build_model_s": build_s,
              "params": json.loads((Path(config.model.name_or_path) / "demo_model.json").read_text())["params"],
              "lengths": audit["splits"]})
    return m


def plan(config, args, m: dict, gpus: int) -> dict:
    """Each phase's seconds on ``gpus`` GPUs from ``measure``'s figures. Generation is costed at the completion limit
    (a batch runs until its longest sample stops): an upper bound. Jobs of a phase share the GPUs (one a GPU)."""
    import math

    gen_tokens = config.eval.max_new_tokens

    def evaluation(tasks: int, k: int) -> float:
        calls = math.ceil(tasks / config.eval.batch_size)
        return calls * gen_tokens * m["gen_s_per_token_eval_batch"] + tasks * k * m["verify_s_per_completion"]

    def spread(jobs: list[float]) -> float:  # longest first onto the least loaded GPU
        loads = [0.0] * gpus
        for job in sorted(jobs, reverse=True):
            loads[loads.index(min(loads))] += job
        return max(loads)

    val, held = m["tasks"]["validation"], m["tasks"]["heldout"]
    checkpoints = config.sft.max_steps // config.run.save_steps
    sft = config.sft.max_steps * m["sft_step_s"]
    # checkpoints are validated on the GPUs SFT leaves free (on one GPU, after it)
    validate = evaluation(val, args.validation_k) * math.ceil(checkpoints / max(1, gpus - 1))
    shards = max(1, gpus - 2) if args.pool_k else 0
    pool = [evaluation(math.ceil(min(args.pool_max, m["tasks"]["rl"]) / shards), args.pool_k)] * shards
    step = (config.rl.max_completion_length * m["gen_s_per_token_rl_batch"]
            + config.rl.per_device_batch_size * m["verify_s_per_completion"] + m["grpo_update_s"])
    heldout = [evaluation(held, args.heldout_k)] * 5 + [evaluation(held, args.heldout_k)] * 3
    if args.turns_k:
        heldout.append(3 * evaluation(held, args.turns_k))
    phases = {"sft (checkpoints validated meanwhile)": max(sft, validate) if gpus > 1 else sft + validate,
              "temperatures and RL pool": spread([evaluation(val, args.validation_k)] * 2 + pool),
              "rl (four arms)": spread([config.rl.steps * step] * len(ARMS)),
              "held-out evaluations": spread(heldout),
              "timed": 5 * args.timed_per_arm * m.get("timed_s_per_kernel", 1.0) / gpus}
    return {"gpus": gpus, "grpo_step_s": step, "phases_s": {k: round(v) for k, v in phases.items()},
            "total_s": round(sum(phases.values()))}


# ---------------------------------------------------------------- the queue, on the GPUs given
class Queue:
    """Jobs on GPUs, one a GPU at a time; a job is a process of this file, its log in ``logs/``, done when
    ``jobs/NAME.json`` exists (it is never run again)."""

    def __init__(self, config, args, gpus: list[str]):
        self.config, self.args, self.gpus = config, args, gpus
        self.p = paths(config)
        self.running: dict[str, tuple[subprocess.Popen, str, float]] = {}  # gpu -> (process, job, start)
        self.failures: dict[str, int] = {}
        for d in (self.p["jobs"], self.p["logs"]):
            d.mkdir(parents=True, exist_ok=True)

    def done(self, name: str) -> bool:
        return (self.p["jobs"] / f"{safe(name)}.json").exists()

    def free(self) -> list[str]:
        return [g for g in self.gpus if g not in self.running]

    def start(self, name: str, gpu: str, all_gpus: bool = False) -> None:
        env = {**os.environ, "CUDA_VISIBLE_DEVICES": ",".join(self.gpus) if all_gpus else gpu,
               "PYTHONUNBUFFERED": "1"}
        workers = max(2, (os.cpu_count() or 2) // len(self.gpus) - 2)  # CPU verification workers a job
        sets = [*self.args.set, f"verify.workers={workers}"]
        argv = [sys.executable, str(Path(__file__).resolve()), "--config", self.args.config, "--job", name,
                *sum((["--set", s] for s in sets), []), *study_argv(self.args)]
        demo._log(f"start {name} on GPU {env['CUDA_VISIBLE_DEVICES']}")
        with open(self.p["logs"] / f"{safe(name)}.log", "a") as log:  # the child keeps its own copy of the fd
            self.running[gpu] = (subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT), name,
                                 time.monotonic())

    def poll(self) -> None:
        for gpu, (proc, name, start) in list(self.running.items()):
            if proc.poll() is None:
                continue
            del self.running[gpu]
            wall = time.monotonic() - start
            if proc.returncode == 0:
                (self.p["jobs"] / f"{safe(name)}.json").write_text(json.dumps(
                    {"job": name, "gpu": gpu, "wall_s": round(wall, 1), "end": time.time()}) + "\n")
                demo._log(f"done {name} in {wall:.0f} s")
                continue
            self.failures[name] = self.failures.get(name, 0) + 1
            demo._log(f"{name} exited {proc.returncode} after {wall:.0f} s (failure {self.failures[name]}; its log: "
                      f"{self.p['logs'] / (safe(name) + '.log')})")
            if self.failures[name] > 2:
                raise SystemExit(f"learning_demo_gpu: {name} failed three times; see its log")

    def run(self, names: list[str], more=None) -> None:
        """Run ``names`` (in order, as GPUs free up) until all are done; ``more()`` may add names as it goes."""
        todo = [n for n in names if not self.done(n)]
        while True:
            if more is not None:  # asked again after the last job ends: what it finished may bring more
                todo += [n for n in more() if n not in todo and not self.done(n) and n not in self.names()]
            if not todo and not self.running:
                break
            for gpu in self.free():
                waiting = [n for n in todo if n not in self.names() and not self.done(n)]
                if not waiting:
                    break
                self.start(waiting[0], gpu)
                todo.remove(waiting[0])
            time.sleep(2)
            self.poll()
            todo = [n for n in todo if not self.done(n)]

    def names(self) -> set[str]:
        return {name for _, name, _ in self.running.values()}


def safe(name: str) -> str:
    return name.replace(":", "_").replace("@", "_at_").replace("/", "_")


def study_argv(args) -> list[str]:
    keys = ("validation_k", "heldout_k", "turns_k", "pool_k", "pool_max", "timed_per_arm", "hidden", "layers",
            "heads", "kv_heads", "vocab", "torch_threads")
    return sum(([f"--{k.replace('_', '-')}", str(getattr(args, k))] for k in keys), [])


def orchestrate(config, args) -> None:
    """The whole run, phase by phase; each phase skips what is done, so running it again resumes."""
    gpus = args.gpus.split(",")
    q = Queue(config, args, gpus)
    p = q.p
    status = Status(p["run"])
    status.set("reference check")
    check_references(config)  # first: a verifier that rejects references here would make every reward wrong
    status.set("sft")
    # SFT on the first GPU; each checkpoint is validated on another GPU as soon as it is complete
    q.run(["sft"], more=lambda: [f"val:{s}" for s, _ in checkpoints(config)])
    q.run([f"val:{s}" for s, _ in checkpoints(config)])
    if not (p["run"] / "sft_selection.json").exists():
        select_sft(config)
    if args.sweep:
        sweep(config, args, q, status)
        return
    status.set("temperature and pool")
    shards = max(1, len(gpus) - 2) if args.pool_k else 0
    q.run(["valtemp:greedy", "valtemp:0.6", *[f"pool:{i}of{shards}" for i in range(shards)]])
    if not (p["run"] / "decoding.json").exists():
        pick_temperature(config)
    if shards and not (p["run"] / "rl_pool.json").exists():
        edge_pool(config, args, shards)
    if args.stop_after == "sft":
        status.set("done")
        return
    status.set("rl")
    q.run([f"arm:{arm}" for arm in ARMS])
    if args.stop_after == "rl":
        status.set("done")
        return
    status.set("heldout")
    best = json.loads((p["run"] / "decoding.json").read_text())["best"]
    evals = [f"heldout:{m}@{EVAL_TEMPERATURE}" for m in ("sft", *ARMS)]
    if best != EVAL_TEMPERATURE:
        evals += [f"heldout:{m}@{best}" for m in ("sft", "grpo_s0", "grpo_s1")]
    q.run(evals + (["turns:grpo_s0"] if args.turns_k else []))
    status.set("timed")
    if args.timed_per_arm and not q.done("timed"):
        timed(q, gpus)
    status.set("summary")
    write_summary(config, args)
    status.set("done")


def sweep(config, args, q: Queue, status) -> None:
    status.set("sweep")
    check_references(config)
    arms = [f"lr{float(lr):g}_s0" for lr in args.sweep.split(",")]
    q.run([f"arm:{arm}" for arm in arms])
    q.run([f"sweepval:{arm}" for arm in arms])
    run = paths(config)["run"]
    step = json.loads((run / "sft_selection.json").read_text())["chosen"]["step"]
    rows = {"sft": crit.task_rates(demo.per_task(run / "validation" / f"sft-step-{step}" / "results.jsonl"))}
    rows.update({arm: crit.task_rates(demo.per_task(run / "sweep" / arm / "results.jsonl")) for arm in arms})
    cluster = {r["name"]: r["signature"] for r in demo.read_rows(paths(config)["validation"])}
    out = {"steps": config.rl.steps, "validation_k": args.validation_k,
           "sft": crit.clustered_difference(rows["sft"], None, cluster),
           "arms": {arm: {"correct_at_1": crit.clustered_difference(rows[arm], None, cluster),
                          "minus_sft": crit.clustered_difference(rows[arm], rows["sft"], cluster),
                          "training": training_health(run, arm)} for arm in arms}}
    (run / "sweep.json").write_text(json.dumps(out, indent=1) + "\n")
    status.set("done")


def timed(q: Queue, gpus: list[str]) -> None:
    """The timed kernels are reported beside the criterion, not part of it: a timed job that fails three times
    leaves ``timed_failed.json`` (and its log) and the summary is written all the same."""
    try:
        while not q.done("timed"):
            q.start("timed", gpus[0], all_gpus=True)
            while q.running:
                time.sleep(2)
                q.poll()
    except SystemExit as exc:
        (q.p["run"] / "timed_failed.json").write_text(json.dumps({"error": str(exc)}) + "\n")
        demo._log(f"the timed kernels are missing from the summary: {exc}")


class Status:
    """``<run_dir>/status.json``: the phase now, for the waiting call."""

    def __init__(self, run_dir: Path):
        self.path = run_dir / "status.json"

    def set(self, phase: str) -> None:
        demo._log(f"phase: {phase}")
        self.path.write_text(json.dumps({"phase": phase, "time": time.time(), "pid": os.getpid()}) + "\n")

    def get(self) -> dict:
        return json.loads(self.path.read_text()) if self.path.exists() else {}


# ---------------------------------------------------------------- the summary
def rates_of(run_dir: Path, what: str) -> dict[str, float] | None:
    path = run_dir / "heldout" / what / "results.jsonl"
    return crit.task_rates(demo.per_task(path)) if path.exists() else None


def arm_figures(run_dir: Path, what: str, cluster_of: dict, family_of: dict, distance: dict) -> dict | None:
    path = run_dir / "heldout" / what / "results.jsonl"
    if not path.exists():
        return None
    from tritonrl.evaluation.metrics import pass_at_k

    counts = demo.per_task(path)
    rates = crit.task_rates(counts)
    k = min(n for _, n in counts.values())
    out = {"correct_at_1": crit.clustered_difference(rates, None, cluster_of), "samples_per_task": k,
           "pass_at": {str(j): sum(pass_at_k(n, c, j) for c, n in counts.values()) / len(counts)
                       for j in range(1, k + 1)}}
    out["families"] = {f: _mean([rates[t] for t in rates if family_of.get(t) == f]) for f in sorted(set(family_of.values()))}
    out["by_distance"] = {str(d): _mean([rates[t] for t in rates if distance.get(t) == d])
                          for d in sorted({v for v in distance.values() if v is not None})}
    return out


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def training_health(run_dir: Path, arm: str) -> dict | None:
    path = run_dir / "arms" / arm / "grpo" / "signal_health.json"
    if not path.exists():
        return None
    steps = json.loads(path.read_text()).get("steps") or []
    keep = ("step", "reward", "reward_std", "true_reward_std", "true_zero_std_groups", "kl", "entropy", "correct_rate",
            "completion_len", "verify_s", "cache_hits")
    return {"steps": [{k: s.get(k) for k in keep if k in s} for s in steps],
            "mean_zero_variance_share": _mean([s["true_zero_std_groups"] for s in steps
                                               if s.get("true_zero_std_groups") is not None])}


def timed_figures(run_dir: Path, label: str, correct_at_1: float | None) -> dict | None:
    path = run_dir / "timed" / f"{label}.jsonl"
    if not path.exists():
        return None
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    speedups = [r["speedup"] for r in rows if r["correct"] and r["speedup"]]
    import math

    faster = sum(s > 1 for s in speedups) / len(speedups) if speedups else None
    return {"timed": len(rows), "correct_again": sum(r["correct"] for r in rows), "resolved": len(speedups),
            "speedup_geomean": math.exp(sum(math.log(s) for s in speedups) / len(speedups)) if speedups else None,
            "faster_share": faster,
            "fast_1": correct_at_1 * faster if faster is not None and correct_at_1 is not None else None}


def write_summary(config, args) -> dict:
    p = paths(config)
    run = p["run"]
    rows = demo.read_rows(p["heldout"])
    cluster_of = {r["name"]: r["signature"] for r in rows}
    family_of = {r["name"]: r["family"] for r in rows}
    train_rows = demo.read_rows(p["sft"]) + demo.read_rows(p["rl"])
    distance = demo.nearest_training(rows, train_rows)["per_task"]
    decoding = json.loads((run / "decoding.json").read_text()) if (run / "decoding.json").exists() else {}
    best = decoding.get("best")
    labels = {"sft": "sft", **{a.replace("grpo", "rl"): a for a in ARMS}}
    rates = {name: rates_of(run, f"{label}@{EVAL_TEMPERATURE}") for name, label in labels.items()}
    for name, label in (("sft", "sft"), ("rl_s0", "grpo_s0"), ("rl_s1", "grpo_s1")):
        rates[f"{name}@best"] = rates_of(run, f"{label}@{best}") if best else None
    out = {"criterion": crit.CRITERION, "date": datetime.date.today().isoformat(), "commit": demo._commit(),
           "device": demo._device(), "machine": demo.machine(), "study": vars(args), "heldout_tasks": len(rows),
           "heldout_op_combinations": len(set(cluster_of.values())), "decoding": decoding}
    if all(v is not None for v in rates.values()):
        figs = crit.figures(rates, cluster_of)
        out.update(figs)
        out["hypotheses"] = crit.hypotheses(figs)
        out["criterion_met"] = crit.criterion_met(figs)
    else:
        out["criterion_met"] = False
        out["missing"] = sorted(k for k, v in rates.items() if v is None)
    out["arms"] = {}
    for what in sorted(d.name for d in (run / "heldout").iterdir()) if (run / "heldout").exists() else []:
        figures = arm_figures(run, what, cluster_of, family_of, distance)
        if figures is not None:
            out["arms"][what] = figures
    for path in sorted((run / "heldout").glob("turns3_*/results.jsonl")):
        out["arms"].setdefault(path.parent.name, {})["by_turn"] = demo.correct_by_turn(path)
    out["timed"] = {label: timed_figures(run, label, (out["arms"].get(f"{label}@{EVAL_TEMPERATURE}") or {})
                                         .get("correct_at_1", {}).get("mean", 1.0 if label == "reference" else None))
                    for label in ("reference", "sft", *ARMS)}
    out["training"] = {arm: training_health(run, arm) for arm in ARMS}
    for name in ("sft_selection", "rl_pool", "length_audit", "prepare", "reference_check", "timed_failed"):
        if (run / f"{name}.json").exists():
            out[name] = json.loads((run / f"{name}.json").read_text())
    out["runs"] = ([json.loads(line) for line in p["heldout_runs"].read_text().splitlines() if line.strip()]
                   if p["heldout_runs"].exists() else [])
    out["jobs"] = [json.loads(f.read_text()) for f in sorted(p["jobs"].glob("*.json"))]
    out["gpu_seconds"] = phase_seconds(out["jobs"], len((args.gpus or "0").split(",")))
    out["figures"] = plot(run, out)
    (run / "learning_demo_gpu.json").write_text(json.dumps(out, indent=1) + "\n")
    return out


def phase_seconds(jobs: list[dict], gpus: int) -> dict[str, float]:
    """GPU seconds per phase: each job's wall time on its GPU (the timed job holds every GPU)."""
    phases: dict[str, float] = {}
    for job in jobs:
        kind = job["job"].split(":")[0]
        phases[kind] = round(phases.get(kind, 0.0) + job["wall_s"] * (gpus if kind == "timed" else 1), 1)
    return phases


def plot(run: Path, summary: dict) -> dict:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(15, 3.8))
    for arm, health in (summary.get("training") or {}).items():
        if not health:
            continue
        xs = [s["step"] for s in health["steps"]]
        axes[0].plot(xs, [s.get("reward") for s in health["steps"]], label=arm)
        axes[1].plot(xs, [s.get("true_zero_std_groups") for s in health["steps"]], label=arm)
    axes[0].set_title("reward per GRPO step")
    axes[1].set_title("share of groups with zero reward variance")
    for ax in axes[:2]:
        ax.set_xlabel("step")
        if ax.has_data():
            ax.legend(fontsize=7)
    arms = [a for a in summary.get("arms", {}) if "correct_at_1" in summary["arms"][a]]
    means = [summary["arms"][a]["correct_at_1"]["mean"] for a in arms]
    errors = [[m - summary["arms"][a]["correct_at_1"]["ci95"][0] for a, m in zip(arms, means)],
              [summary["arms"][a]["correct_at_1"]["ci95"][1] - m for a, m in zip(arms, means)]]
    axes[2].bar(range(len(arms)), means, yerr=errors, capsize=3)
    axes[2].set_xticks(range(len(arms)), arms, rotation=45, ha="right", fontsize=7)
    axes[2].set_title(f"held-out correct@1 ({summary.get('heldout_tasks')} tasks), 95% CI by op combination")
    axes[2].set_ylim(0, 1)
    fig.tight_layout()
    path = run / "figures" / "learning_demo_gpu.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return {"plot": str(path)}


# ---------------------------------------------------------------- the device call: start or join, wait, copy
def running_pid(run: Path) -> int | None:
    pid_file = run / "orchestrator.pid"
    if not pid_file.exists():
        return None
    pid = int(pid_file.read_text())
    try:
        os.kill(pid, 0)
    except OSError:
        return None
    return pid


def start_detached(args) -> subprocess.Popen:
    """The queue in a new process session: it keeps running between device calls while the machine is held."""
    argv = [sys.executable, str(Path(__file__).resolve()), *[a for a in sys.argv[1:] if a != "--detach"],
            "--foreground"]
    argv = _without(argv, ("--out", "--wait-s"))
    config = load(args)
    run = paths(config)["run"]
    run.mkdir(parents=True, exist_ok=True)
    with open(run / "orchestrator.log", "a") as log:
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                env={**os.environ, "PYTHONUNBUFFERED": "1"})
    (run / "orchestrator.pid").write_text(str(proc.pid))
    demo._log(f"started the run (pid {proc.pid}); its log: {run / 'orchestrator.log'}")
    return proc


def _without(argv: list[str], options: tuple[str, ...]) -> list[str]:
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
            continue
        if a in options:
            skip = True
            continue
        if not any(a.startswith(o + "=") for o in options):
            out.append(a)
    return out


def collect(run: Path, out: Path) -> None:
    """What fits the way back (at most 8 files of 16 MiB; no weights, no optimizer state): the summary and plot as
    files, the rest in three archives (held-out results with completions, the other results, everything else)."""
    out.mkdir(parents=True, exist_ok=True)
    for name in ("learning_demo_gpu.json", "figures/learning_demo_gpu.png", "status.json", "orchestrator.log",
                 "sweep.json"):
        if (run / name).exists():
            (out / Path(name).name).write_bytes((run / name).read_bytes())

    def small(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
        heavy = (".safetensors", ".bin", ".pt", ".pth", ".ckpt")
        if info.name.endswith(heavy) or "/checkpoints/" in info.name or "/tasks/" in info.name:
            return None
        return info

    # xz at a low preset: ~130 MB of held-out rows compress to ~10 MB in seconds (the default preset takes a minute)
    for name, subs in (("results_heldout.tar.xz", ("heldout",)),
                       ("results_train.tar.xz", ("validation", "pool", "timed", "sweep"))):
        with tarfile.open(out / name, "w:xz", preset=2) as tar:
            for sub in subs:
                if (run / sub).exists():
                    tar.add(run / sub, arcname=sub, filter=small)
    with tarfile.open(out / "run.tar.gz", "w:gz") as tar:
        for item in sorted(run.iterdir()):
            if item.name not in ("heldout", "validation", "pool", "timed", "sweep", "tasks", "base_model"):
                tar.add(item, arcname=item.name, filter=small)


def device_call(config, args) -> int:
    run = paths(config)["run"]
    status = Status(run)
    proc = None
    if status.get().get("phase") != "done" and running_pid(run) is None:
        proc = start_detached(args)

    def alive() -> bool:  # our own child is polled (a dead one is a zombie until reaped: kill(pid, 0) still works)
        return proc.poll() is None if proc is not None else running_pid(run) is not None

    deadline = time.monotonic() + args.wait_s
    while time.monotonic() < deadline and status.get().get("phase") != "done":
        if not alive() and status.get().get("phase") != "done":
            time.sleep(1)
            if status.get().get("phase") != "done":
                demo._log("the run stopped before it was done; its log:")
                print((run / "orchestrator.log").read_text()[-4000:])
                break
        time.sleep(5)
    # The summary takes seconds: copying while it is written sent back the archives without the summary's own
    # files (the issue-37 run's last call). Give it a minute past the call's budget.
    grace = time.monotonic() + SUMMARY_GRACE_S
    while status.get().get("phase") == "summary" and alive() and time.monotonic() < grace:
        time.sleep(1)
    if args.out:
        collect(run, Path(args.out))
    phase = status.get().get("phase")
    demo._log(f"phase now: {phase}")
    return 0 if phase == "done" else 3


def main(argv=None) -> int:
    args = parse_args(argv)
    demo._commit()
    config = load(args)
    if args.prepare:
        print(json.dumps(prepare(config, args), indent=1))
        return 0
    if args.job:
        run_job(config, args, args.job)
        return 0
    if args.measure:
        m = measure(config, args)
        m["tasks"] = {s: len(demo.read_rows(paths(config)[s])) if (paths(config)[s] / "tasks.jsonl").exists() else 0
                      for s in ("sft", "rl", "validation", "heldout")}  # the rehearsal carries no held-out tasks
        Path(args.measure).write_text(json.dumps(m, indent=1) + "\n")
        print(json.dumps(m, indent=1))
        return 0
    if args.summarize_only:
        print(json.dumps(write_summary(config, args), indent=1)[:4000])
        return 0
    if not args.gpus:
        raise SystemExit("learning_demo_gpu: --gpus is needed to run (e.g. --gpus 0,1,2,3)")
    if args.foreground:
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
        (paths(config)["run"] / "orchestrator.pid").write_text(str(os.getpid()))
        orchestrate(config, args)
        return 0
    return device_call(config, args)


if __name__ == "__main__":
    sys.exit(main())
