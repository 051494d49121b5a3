"""Study two (issue 50): RL beyond SFT where there is room to add, and which RL method, on one GPU.

    # here, on the CPU: the splits (from three generated directories: docs/results.md has the commands), the
    # tokenizer, the length audit, prepare.json
    python benchmarks/study2.py --config configs/study2.yaml --prepare
    # on the GPU host, the same command in every call until it prints "phase now: done" (the run goes on in its own
    # process session between calls while the machine is held; each call copies what exists to --out)
    python benchmarks/study2.py --config configs/study2.yaml --phase calibration --slots 4 --wait-s 540 --out $OUT

The rules (S*, the futility rule, the edge screen, the equal budget, the criterion) are in ``study2_criterion.py``,
registered before the calibration call. The run is a queue of jobs, each a process of this file (``--job NAME``)
sharing the GPU (``--slots`` at a time), resumable and marked done in ``<run_dir>/jobs/NAME.json``.

Calibration (train and validation data only; writes ``calibration.json``): ``sft`` (deterministic, a checkpoint
every 100 steps); for each checkpoint from ``--first-validated`` on, ``val:STEP`` (validation, 16 samples a task at
1.0), ``edge:STEP`` (128 calibration prompts, 4 samples: the edge share) and ``entropy:STEP`` (token entropy of
the validation samples); the host picks S* and SFT_best (``select_start``) and stops when the futility rule says
so; then ``valtemp:greedy`` and ``valtemp:0.6`` (SFT_best's best temperature), ``lrscreen`` (S* on 1,024 other
calibration prompts, 4 samples), ``lr:RATE`` (a short GRPO from S* on their edge, one a rate) and ``lrval:RATE``
(validation, 8 samples a task); the host picks the rate (``pick_learning_rate``).
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import learning_demo as demo  # noqa: E402  (splits, model, audit, per-task counts)
import learning_demo_gpu as gpu  # noqa: E402  (evaluation on a split, the queue, the detached run)
import study2_criterion as reg  # noqa: E402

PHASES = ("calibration",)


# ---------------------------------------------------------------- settings (the registered values are the defaults)
def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--config", required=True)
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="config override")
    p.add_argument("--prepare", action="store_true", help="on the CPU: the splits, tokenizer and audit, then exit")
    p.add_argument("--phase", choices=PHASES, default=None, help="the part of the study to run")
    p.add_argument("--slots", type=int, default=4, help="jobs sharing the GPU at a time")
    p.add_argument("--wait-s", type=float, default=540.0, help="wait this long for the run, then copy and return")
    p.add_argument("--out", default=None, help="copy the results here (a device call's $OUT) before returning")
    p.add_argument("--job", default=None, help=argparse.SUPPRESS)
    p.add_argument("--foreground", action="store_true", help="run the queue in this process (tests, rehearsal)")
    p.add_argument("--rehearsal", action="store_true",
                   help="a rehearsal (toy sizes): goes on past the futility rule, so every step runs; recorded")
    g = p.add_argument_group("the study's sizes (defaults: the registered ones; a rehearsal shrinks them)")
    g.add_argument("--validation-n", type=int, default=120, help="validation tasks (whole op combinations)")
    g.add_argument("--calib-edge-n", type=int, default=128, help="calibration prompts for each checkpoint's edge share")
    g.add_argument("--calib-lr-n", type=int, default=1024, help="calibration prompts screened for the rate check")
    g.add_argument("--first-validated", type=int, default=300, help="first SFT step validated")
    g.add_argument("--validation-k", type=int, default=reg.VALIDATION_K)
    g.add_argument("--lr-steps", type=int, default=8, help="GRPO steps of each rate in the rate check")
    g.add_argument("--lr-validation-k", type=int, default=8, help="validation samples a task after the rate check")
    g.add_argument("--hidden", type=int, default=512)
    g.add_argument("--layers", type=int, default=8)
    g.add_argument("--heads", type=int, default=8)
    g.add_argument("--kv-heads", type=int, default=4)
    g.add_argument("--vocab", type=int, default=4000)
    g.add_argument("--torch-threads", type=int, default=4, help="torch threads per job process")
    return p.parse_args(argv)


SIZE_KEYS = ("validation_n", "calib_edge_n", "calib_lr_n", "first_validated", "validation_k", "lr_steps",
             "lr_validation_k", "hidden", "layers", "heads", "kv_heads", "vocab", "torch_threads")


def size_argv(args) -> list[str]:
    return sum(([f"--{k.replace('_', '-')}", str(getattr(args, k))] for k in SIZE_KEYS), [])


def paths(config) -> dict[str, Path]:
    run = Path(config.run.run_dir)
    tasks = Path(config.data.sft_sources[0]).parent
    named = {name: tasks / name for name in ("sft", "validation", "heldout", "calib_edge", "calib_lr", "stream",
                                             "stream_all", "heldout_pool")}
    return {"run": run, "tasks": tasks, **named, "jobs": run / "jobs", "logs": run / "logs",
            "calibration": run / "calibration", "heldout_runs": run / "heldout_runs.jsonl"}


# ---------------------------------------------------------------- --prepare (CPU, before any device call)
def prepare(config, args) -> dict:
    """Validation and held-out from the held-out pool (whole op combinations), the calibration prompts and the RL
    stream from the unverified train stream (minus any SFT task), in a seeded order; the tokenizer; the audit."""
    p = paths(config)
    for d in (p["sft"], p["heldout_pool"], p["stream_all"]):
        if not (d / "generation_report.json").exists():
            raise SystemExit(f"study2: {d} is not a finished generated split (tritonrl tasks generate)")
    held, val = demo.split_by_signature(demo.read_rows(p["heldout_pool"]), args.validation_n)
    demo.subset(p["heldout_pool"], p["validation"], [r["name"] for r in val])
    demo.subset(p["heldout_pool"], p["heldout"], [r["name"] for r in held])
    sft_names = {r["name"] for r in demo.read_rows(p["sft"])}
    order = sorted(r["name"] for r in demo.read_rows(p["stream_all"]) if r["name"] not in sft_names)
    random.Random("study2-stream").shuffle(order)
    cut = args.calib_edge_n + args.calib_lr_n
    parts = {"calib_edge": order[:args.calib_edge_n], "calib_lr": order[args.calib_edge_n:cut], "stream": order[cut:]}
    for name, names in parts.items():
        demo.subset(p["stream_all"], p[name], names)
        (p[name] / "order.json").write_text(json.dumps(names) + "\n")
    build_model(config, args)
    splits = ("sft", "validation", "heldout", "calib_edge", "calib_lr", "stream")
    audit = demo.audit_lengths(config, {s: p[s] for s in splits})
    p["run"].mkdir(parents=True, exist_ok=True)
    (p["run"] / "length_audit.json").write_text(json.dumps(audit, indent=1) + "\n")
    signatures = {s: {r["signature"] for r in demo.read_rows(p[s])} for s in splits}
    shared = {f"{a}&{b}": len(signatures[a] & signatures[b]) for a in ("heldout", "validation")
              for b in splits if b != a and (a, b) != ("validation", "heldout")}
    if any(shared.values()):
        raise SystemExit(f"study2: splits share op combinations: {shared}")
    report = {"split_salt": reg.SPLIT_SALT, "tasks": {s: len(demo.read_rows(p[s])) for s in splits},
              "op_combinations": {s: len(v) for s, v in signatures.items()}, "shared_op_combinations": shared,
              "sha256": {s: hashlib.sha256((p[s] / "tasks.jsonl").read_bytes()).hexdigest() for s in splits},
              "tokenizer_sha256": tokenizer_digest(config),
              "lengths": audit["splits"]}
    (p["run"] / "prepare.json").write_text(json.dumps(report, indent=1) + "\n")
    return report


def tokenizer_digest(config) -> str:
    return hashlib.sha256((Path(config.model.name_or_path) / "tokenizer.json").read_bytes()).hexdigest()


def build_model(config, args) -> Path:
    return demo.build_demo_model(config.model.name_or_path, args.hidden, args.layers, args.heads, args.kv_heads,
                                 config.run.seed, vocab=args.vocab, corpus_dir=paths(config)["sft"])


# ---------------------------------------------------------------- the calibration's jobs
def run_job(config, args, name: str) -> None:
    import torch

    torch.set_num_threads(args.torch_threads)
    # the calibration never reads the held-out split (it is not even on the machine): the pipeline's data stage
    # checks eval.tasks, so it names the validation split here
    config = dataclasses.replace(config, eval=dataclasses.replace(config.eval, tasks=str(paths(config)["validation"])))
    kind, _, arg = name.partition(":")
    {"sftcheck": lambda c, a, _: check_sft_set(c), "sft": job_sft, "remake": job_remake, "rejudge": job_rejudge,
     "val": job_val, "edge": job_edge, "entropy": job_entropy, "valtemp": job_valtemp,
     "lrscreen": job_lrscreen, "lr": job_lr, "lrval": job_lrval}[kind](config, args, arg)


def job_sft(config, args, _arg) -> None:
    build_model(config, args)
    gpu.job_sft(config, args, _arg)
    check_digests(config)


def job_remake(config, args, step: str) -> None:
    """A re-made checkpoint samples exactly what the first one sampled: the first generate call of its validation
    (the same prompts and seed) is made again and compared with the recorded completions, sample by sample."""
    from tritonrl.common.generation import load_generator, prompts_per_call
    from tritonrl.common.prompts import build_messages, load_template
    from tritonrl.tasks import load_tasks

    recorded_dir = calib_dir(config, "val", f"step-{step}")
    recorded = {}
    for line in (recorded_dir / "completions.jsonl").read_text().splitlines():
        row = json.loads(line)
        recorded[(row["task"], row["sample"])] = row["completion"]
    gen = dataclasses.replace(config.eval, temperature=gpu.TEMPERATURES["1.0"], k=args.validation_k)
    model = str(checkpoint(config, step))
    tasks = load_tasks(str(paths(config)["validation"]))[:prompts_per_call(model, gen)]
    texts = load_generator(model, gen).generate([build_messages(t, load_template(gen.prompt_template))
                                                 for t in tasks], gen.k)
    pairs = [(recorded.get((t.name, i)), text) for t, samples in zip(tasks, texts) for i, text in enumerate(samples)]
    result = {"step": int(step), "compared": len(pairs), "equal": sum(a == b for a, b in pairs)}
    out = calib_dir(config, "remake", f"step-{step}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result) + "\n")


def checkpoint(config, step: int | str) -> Path:
    found = dict(demo.sft_checkpoints(paths(config)["run"]))
    if int(step) not in found:
        raise SystemExit(f"study2: no complete SFT checkpoint at step {step}")
    return found[int(step)]


def validated_steps(config, args) -> list[int]:
    return [s for s, _ in demo.sft_checkpoints(paths(config)["run"]) if s >= args.first_validated]


def calib_dir(config, *parts: str) -> Path:
    return paths(config)["calibration"].joinpath(*parts)


VERIFIER_JSON = "verifier.json"


def verifier_digest() -> str:
    """sha256 of the code a verdict depends on (the verifier, extraction, tasks and their shapes, the config's
    defaults): two evaluations with the same digest were judged alike."""
    src = Path(__file__).resolve().parents[1] / "src" / "tritonrl"
    files = sorted([*(src / "verify").rglob("*.py"), *(src / "tasks").rglob("*.py"), src / "extract.py",
                    src / "config.py", src / "common" / "result_log.py"])
    h = hashlib.sha256()
    for path in files:
        h.update(str(path.relative_to(src)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def evaluated(config, model: str, split: str, out: Path, temperature: str, k: int) -> None:
    """``learning_demo_gpu.evaluate_on`` on one of this study's splits, then the verifier's digest beside it."""
    gpu.evaluate_on(config, model, split, out, temperature, k, tasks_dir=paths(config)[split])
    (out / VERIFIER_JSON).write_text(json.dumps({"verifier": verifier_digest()}) + "\n")


def job_val(config, args, step: str) -> None:
    evaluated(config, str(checkpoint(config, step)), "validation", calib_dir(config, "val", f"step-{step}"), "1.0",
              args.validation_k)


def job_edge(config, args, step: str) -> None:
    evaluated(config, str(checkpoint(config, step)), "calib_edge", calib_dir(config, "edge", f"step-{step}"), "1.0",
              reg.EDGE_K)


def job_rejudge(config, args, what: str) -> None:
    """``KIND/step-S`` judged by an earlier verifier: its recorded samples judged again by this one (no sampling),
    so every verdict the calibration compares comes from the same verifier."""
    from tritonrl.common.result_log import Pending
    from tritonrl.evaluation.evaluate import verify_and_report
    from tritonrl.tasks import load_tasks

    kind, step_dir = what.split("@")[0].split("/")
    out = calib_dir(config, kind, step_dir)
    split = {"val": "validation", "edge": "calib_edge"}[kind]
    tasks = {t.name: t for t in load_tasks(str(paths(config)[split]))}
    rows = [json.loads(line) for line in (out / "completions.jsonl").read_text().splitlines() if line.strip()]
    pending = [Pending(tasks[r["task"]], r["sample"], completion=r["completion"]) for r in rows]
    verify_and_report(pending, config.verify, out, {"split": split, "rejudged": True}, resume=False)
    (out / VERIFIER_JSON).write_text(json.dumps({"verifier": verifier_digest(), "rejudged": True}) + "\n")


def job_entropy(config, args, step: str) -> None:
    out = calib_dir(config, "entropy", f"step-{step}.json")
    completions = calib_dir(config, "val", f"step-{step}") / "completions.jsonl"
    value = token_entropy(checkpoint(config, step), paths(config)["validation"], completions,
                          config.eval.prompt_template)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"step": int(step), **value}) + "\n")


def token_entropy(model_dir: Path, tasks_dir: Path, completions_jsonl: Path, template: str | None,
                  batch: int = 64) -> dict:
    """The mean entropy (nats) of the model's next-token distribution at temperature 1.0 over the tokens of its own
    sampled completions (teacher-forced; the prompt as generation builds it)."""
    import torch

    from tritonrl.common.llm import load_model
    from tritonrl.common.prompts import build_messages, load_template
    from tritonrl.config import ModelConfig
    from tritonrl.tasks import load_tasks

    model, tokenizer = load_model(ModelConfig(name_or_path=str(model_dir), dtype="auto"))
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = model.to(device).eval()
    tasks = {t.name: t for t in load_tasks(str(tasks_dir))}
    chat = load_template(template)
    rows = [json.loads(line) for line in completions_jsonl.read_text().splitlines() if line.strip()]
    pairs = []
    for row in rows:
        prompt = tokenizer.apply_chat_template(build_messages(tasks[row["task"]], chat), tokenize=False,
                                               add_generation_prompt=True)
        p_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
        c_ids = tokenizer(row["completion"], add_special_tokens=False)["input_ids"]
        if c_ids:
            pairs.append((p_ids, c_ids))
    total, tokens = 0.0, 0
    with torch.no_grad():
        for start in range(0, len(pairs), batch):
            chunk = pairs[start:start + batch]
            width = max(len(p) + len(c) for p, c in chunk)
            ids = torch.full((len(chunk), width), tokenizer.pad_token_id, dtype=torch.long)
            mask = torch.zeros_like(ids)
            scored = torch.zeros_like(ids, dtype=torch.bool)
            for i, (p, c) in enumerate(chunk):
                ids[i, :len(p) + len(c)] = torch.tensor(p + c)
                mask[i, :len(p) + len(c)] = 1
                scored[i, len(p) - 1:len(p) + len(c) - 1] = True  # the positions that predict the completion
            logits = model(input_ids=ids.to(device), attention_mask=mask.to(device)).logits.float()
            logp = torch.log_softmax(logits, dim=-1)
            entropy = -(logp.exp() * logp).sum(-1)
            total += float(entropy[scored.to(device)].sum())
            tokens += int(scored.sum())
    return {"entropy_per_token": total / tokens if tokens else None, "tokens": tokens, "completions": len(pairs)}


def job_valtemp(config, args, temperature: str) -> None:
    model = checkpoint(config, calibration(config)["sft_best"])
    evaluated(config, str(model), "validation", calib_dir(config, "valtemp", temperature), temperature,
              args.validation_k)


def job_lrscreen(config, args, _arg) -> None:
    model = checkpoint(config, calibration(config)["s_star"])
    evaluated(config, str(model), "calib_lr", calib_dir(config, "lrscreen"), "1.0", reg.EDGE_K)


def lr_name(rate: float) -> str:
    return f"{rate:g}"


def lr_arm_config(config, args, rate: str):
    """GRPO from S* at ``rate`` on the rate check's edge prompts (the same ones, in the same order, for every rate),
    ``--lr-steps`` steps, seed 0, in ``calibration/lr/RATE``."""
    run_dir = calib_dir(config, "arms", f"lr-{rate}")
    share_model(config, run_dir, checkpoint(config, calibration(config)["s_star"]))
    rl = dataclasses.replace(config.rl, init_from="sft", learning_rate=float(rate), steps=args.lr_steps)
    data = dataclasses.replace(config.data, source=str(calib_dir(config, "lr_prompts")))
    return dataclasses.replace(config, rl=rl, data=data, run=dataclasses.replace(config.run, run_dir=str(run_dir)))


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


def job_lr(config, args, rate: str) -> None:
    from tritonrl.pipeline import run_pipeline

    cfg = lr_arm_config(config, args, rate)
    run_pipeline(dataclasses.replace(cfg, pipeline=dataclasses.replace(cfg.pipeline, stages=["rl"],
                                                                       eval_models=["base"])), log=demo._log)


def lr_model(config, rate: str) -> str:
    from tritonrl.common.stages import stage_name

    return f"{calib_dir(config, 'arms', f'lr-{rate}')}:{stage_name(config.rl.algo)}"


def job_lrval(config, args, rate: str) -> None:
    evaluated(config, lr_model(config, rate), "validation", calib_dir(config, "lrval", rate), "1.0",
              args.lr_validation_k)


# ---------------------------------------------------------------- the host's decisions (the registered rules)
def counts(path: Path) -> dict[str, tuple[int, int]]:
    return demo.per_task(path / "results.jsonl")


def calibration(config) -> dict:
    return json.loads((paths(config)["run"] / "calibration.json").read_text())


def write_calibration(config, update: dict) -> dict:
    path = paths(config)["run"] / "calibration.json"
    current = json.loads(path.read_text()) if path.exists() else {"criterion": reg.CRITERION}
    current.update(update)
    path.write_text(json.dumps(current, indent=1) + "\n")
    return current


def choose_start(config, args) -> dict:
    """S*, SFT_best and H_val from every validated checkpoint (``select_start``), with each one's entropy and edge
    share beside it."""
    steps = validated_steps(config, args)
    scores = reg.checkpoint_scores({s: counts(calib_dir(config, "val", f"step-{s}")) for s in steps})
    for row in scores:
        edge_counts = counts(calib_dir(config, "edge", f"step-{row['step']}"))
        row["edge_share"] = len(reg.edge(edge_counts)) / len(edge_counts)
        row["entropy_per_token"] = json.loads(
            calib_dir(config, "entropy", f"step-{row['step']}.json").read_text())["entropy_per_token"]
    choice = reg.select_start(scores)
    choice["digests"] = {str(s): weights_digest(checkpoint(config, s)) for s in (choice["s_star"], choice["sft_best"])}
    demo._log(f"calibration: S* = step {choice['s_star']} (H_val {choice['headroom_val']:.3f}), SFT_best = step "
              f"{choice['sft_best']}; futile: {choice['futile']}")
    return write_calibration(config, {"checkpoints": scores, **choice, "sizes": {k: getattr(args, k) for k in SIZE_KEYS}})


def stale_verdicts(config, q: Queue) -> list[str]:
    """The done validations and edge screens whose verdicts another verifier made (or none recorded which)."""
    now = verifier_digest()
    stale = []
    for kind in ("val", "edge"):
        for d in sorted(calib_dir(config, kind).glob("step-*")):
            done = q.done(f"{kind}:{d.name.split('-')[1]}")
            record = json.loads((d / VERIFIER_JSON).read_text()) if (d / VERIFIER_JSON).exists() else {}
            if record.get("verifier") == now:
                continue
            if done:
                stale.append(f"rejudge:{kind}/{d.name}@{now[:12]}")
            else:  # cut short in an earlier hold: its samples stay, its verdicts are made again when it resumes
                (d / "results.jsonl").unlink(missing_ok=True)
    return stale


def check_remade(config, q: Queue) -> None:
    """Before anything reads a re-made SFT: each checkpoint validated in an earlier hold samples again exactly what
    it sampled then (``job_remake``), or the run stops. (The weights digests make the same check from the first
    hold that recorded them on.)"""
    steps = [d.name.split("-")[1] for d in sorted(calib_dir(config, "val").glob("step-*"))
             if (d / "completions.jsonl").exists() and q.done(f"val:{d.name.split('-')[1]}")]
    q.run([f"remake:{s}" for s in steps])
    checks = [json.loads(calib_dir(config, "remake", f"step-{s}.json").read_text()) for s in steps]
    differ = [c for c in checks if c["equal"] != c["compared"] or not c["compared"]]
    write_calibration(config, {"remade": {"checks": checks, "all_equal": not differ}})
    if differ:
        raise SystemExit(f"study2: the re-made SFT samples differently from the first at {differ}")
    demo._log(f"re-made SFT samples as the first did at steps {steps}")


def check_digests(config) -> None:
    """Every checkpoint's weights digest: written at the first SFT, compared when a later hold re-makes SFT (the
    deterministic recipe on the same stack must give the same bytes, else the run stops)."""
    path = calib_dir(config, "digests.json")
    now = {str(step): weights_digest(ckpt) for step, ckpt in demo.sft_checkpoints(paths(config)["run"])}
    if path.exists():
        before = json.loads(path.read_text())
        differ = sorted((s for s in before if now.get(s) != before[s]), key=int)
        if differ:
            raise SystemExit(f"study2: the re-made SFT checkpoints differ from the first ones at steps {differ}")
        demo._log(f"re-made SFT: every checkpoint's weights equal the first run's ({len(before)} compared)")
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(now, indent=1) + "\n")


def weights_digest(model_dir: Path) -> str:
    """sha256 of a checkpoint's weight files: the main run re-makes S* and compares."""
    h = hashlib.sha256()
    for path in sorted(model_dir.glob("*.safetensors")):
        h.update(path.name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def choose_temperature(config) -> dict:
    best = calibration(config)["sft_best"]
    dirs = {"greedy": calib_dir(config, "valtemp", "greedy"), "0.6": calib_dir(config, "valtemp", "0.6"),
            "1.0": calib_dir(config, "val", f"step-{best}")}
    scores = {name: reg.pass_at(counts(d), 1) for name, d in dirs.items()}
    return write_calibration(config, {"sft_best_temperatures": scores,
                                      "sft_best_temperature": reg.best_temperature(scores)})


def lr_prompts(config, args) -> dict:
    """The rate check's prompts: S*'s edge among the screened calibration prompts, in their stream order."""
    order = json.loads((paths(config)["calib_lr"] / "order.json").read_text())
    screened = counts(calib_dir(config, "lrscreen"))
    edge = reg.stream_edge(order, screened)
    per_step = config.rl.per_device_batch_size // config.rl.num_generations  # 32 in the registered recipe
    wanted = args.lr_steps * per_step
    used = reg.rate_check_prompts(len(edge), wanted, per_step)
    demo.subset(paths(config)["calib_lr"], calib_dir(config, "lr_prompts"), edge[:used])
    report = {"screened": len(screened), "edge": len(edge), "used": used, "wanted": wanted}
    demo._log(f"rate check prompts: {report}")
    return write_calibration(config, {"lr_prompts": report})


def choose_learning_rate(config, args) -> dict:
    scores = {rate: reg.pass_at(counts(calib_dir(config, "lrval", lr_name(rate))), 1) for rate in reg.LEARNING_RATES}
    rate = reg.pick_learning_rate(scores)
    health = {lr_name(r): gpu.training_health(calib_dir(config), f"lr-{lr_name(r)}") for r in reg.LEARNING_RATES}
    return write_calibration(config, {"lr_validation_pass_at_1": {lr_name(r): v for r, v in scores.items()},
                                      "learning_rate": rate, "lr_training": health})


# ---------------------------------------------------------------- the queue on one GPU's slots
class Queue(gpu.Queue):
    """``learning_demo_gpu.Queue`` with several slots on one GPU (``0#0``, ``0#1``, ...) and this file's jobs."""

    def start(self, name: str, gpu_slot: str, all_gpus: bool = False) -> None:
        env = {**os.environ, "CUDA_VISIBLE_DEVICES": gpu_slot.split("#")[0], "PYTHONUNBUFFERED": "1"}
        workers = max(2, (os.cpu_count() or 2) - 2)  # every job may use every core: they are rarely all verifying
        argv = [sys.executable, str(Path(__file__).resolve()), "--config", self.args.config, "--job", name,
                *sum((["--set", s] for s in [*self.args.set, f"verify.workers={workers}"]), []), *size_argv(self.args)]
        demo._log(f"start {name} on slot {gpu_slot}")
        with open(self.p["logs"] / f"{gpu.safe(name)}.log", "a") as log:
            self.running[gpu_slot] = (subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT), name,
                                      time.monotonic())


def calibrate(config, args, q: Queue, status: gpu.Status) -> None:
    """The calibration, phase by phase; each phase skips what is done, so running it again resumes."""
    run = paths(config)["run"]
    if not (run / "length_audit_device.json").exists():  # the tokenizer built here, from the same SFT set
        build_model(config, args)
        audit = demo.audit_lengths(config, {s: paths(config)[s] for s in ("sft", "validation", "calib_edge", "calib_lr")})
        audit["tokenizer_sha256"] = tokenizer_digest(config)
        (run / "length_audit_device.json").write_text(json.dumps(audit, indent=1) + "\n")
    status.set("sft, its check and the checkpoints' validation")

    def checkpoint_jobs() -> list[str]:
        return [f"{kind}:{s}" for s in validated_steps(config, args) for kind in ("val", "edge")]

    remade = q.done("sft") and not demo.sft_checkpoints(run)  # a later hold: the weights are gone
    if remade:
        (paths(config)["jobs"] / "sft.json").unlink()
    # the SFT set's references are judged beside SFT (a failure stops the run before any decision reads SFT)
    q.run(["sftcheck", "sft"], more=None if remade else checkpoint_jobs)
    if remade:
        check_remade(config, q)
    stale = stale_verdicts(config, q)  # judged in an earlier hold by another verifier: judged again by this one
    q.run(checkpoint_jobs())
    q.run(stale)
    q.run([f"entropy:{s}" for s in validated_steps(config, args)])
    if not (run / "sft_check.json").exists():
        raise SystemExit("study2: the SFT set's check did not finish; see logs/sftcheck.log")
    if not (run / "calibration.json").exists() or "s_star" not in calibration(config):
        choose_start(config, args)
    if calibration(config)["futile"] and not args.rehearsal:
        status.set("done")  # the futility rule: the study is not run
        return
    write_calibration(config, {"rehearsal": args.rehearsal})
    status.set("temperatures and rate check")
    q.run(["valtemp:greedy", "valtemp:0.6", "lrscreen"])
    if "sft_best_temperature" not in calibration(config):
        choose_temperature(config)
    if "lr_prompts" not in calibration(config):
        lr_prompts(config, args)
    if not calibration(config)["lr_prompts"]["used"]:  # the registered rule: too few edge prompts to compare
        write_calibration(config, {"learning_rate": reg.DEFAULT_LEARNING_RATE, "lr_check": "too few edge prompts"})
    rates = [lr_name(r) for r in reg.LEARNING_RATES] if "learning_rate" not in calibration(config) else []
    q.run([f"lr:{r}" for r in rates])
    q.run([f"lrval:{r}" for r in rates])
    if "learning_rate" not in calibration(config):
        choose_learning_rate(config, args)
    status.set("done")


def check_sft_set(config) -> None:
    """The SFT set was drawn here without judging its references (``--no-verify``: this machine's two cores would
    take an hour); on the device, the same generation with every reference judged must keep exactly the same
    tasks (``tasks.jsonl`` byte for byte), or the run stops: the splits, the tokenizer and the audit were made from
    it. Also the test that the reward's verifier works on this machine."""
    import dataclasses as dc

    from tritonrl.taskgen import default_verify_config, generate_tasks

    p = paths(config)
    out = p["run"] / "sft_check.json"
    if out.exists():
        return
    drawn = json.loads((p["sft"] / "generation_report.json").read_text())
    verified = p["tasks"] / "sft_verified"
    verify = dc.replace(default_verify_config(), device="cpu", workers=config.verify.workers)
    start = time.monotonic()
    report = generate_tasks(drawn["n"], drawn["seed"], drawn["split"], verified, verify_config=verify,
                            split_salt=drawn["split_salt"])
    same = (verified / "tasks.jsonl").read_bytes() == (p["sft"] / "tasks.jsonl").read_bytes()
    result = {"tasks": report.kept, "references_verified": report.verified, "failed": report.verify_failed,
              "same_tasks": same, "seconds": round(time.monotonic() - start, 1)}
    if not same:
        raise SystemExit(f"study2: the verified SFT set differs from the one the splits were made from: {result}")
    p["run"].mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result) + "\n")


# ---------------------------------------------------------------- the device call: start or join, wait, copy
def collect(config, out: Path) -> None:
    """What comes back: calibration.json, the status and log, and the calibration's results (no weights)."""
    import tarfile

    run = paths(config)["run"]
    out.mkdir(parents=True, exist_ok=True)
    for name in ("calibration.json", "status.json", "orchestrator.log", "sft_check.json"):
        if (run / name).exists():
            (out / name).write_bytes((run / name).read_bytes())

    def small(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
        heavy = (".safetensors", ".bin", ".pt", ".pth", ".ckpt")
        return None if info.name.endswith(heavy) or "/checkpoints/" in info.name else info

    with tarfile.open(out / "calibration.tar.xz", "w:xz", preset=2) as tar:
        for item in ("calibration", "jobs", "logs", "sft", "manifest.json", "length_audit_device.json"):
            if (run / item).exists():
                tar.add(run / item, arcname=item, filter=small)


def device_call(config, args) -> int:
    run = paths(config)["run"]
    run.mkdir(parents=True, exist_ok=True)
    status = gpu.Status(run)
    proc = None
    if status.get().get("phase") != "done" and gpu.running_pid(run) is None:
        argv = [sys.executable, str(Path(__file__).resolve()),
                *gpu._without([a for a in sys.argv[1:]], ("--out", "--wait-s")), "--foreground"]
        with open(run / "orchestrator.log", "a") as log:
            proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                    env={**os.environ, "PYTHONUNBUFFERED": "1"})
        (run / "orchestrator.pid").write_text(str(proc.pid))
    deadline = time.monotonic() + args.wait_s
    while time.monotonic() < deadline and status.get().get("phase") != "done":
        alive = proc.poll() is None if proc is not None else gpu.running_pid(run) is not None
        if not alive:
            demo._log("the run stopped before it was done; its log:")
            print((run / "orchestrator.log").read_text()[-4000:])
            break
        time.sleep(5)
    if args.out:
        collect(config, Path(args.out))
    phase = status.get().get("phase")
    demo._log(f"phase now: {phase}")
    return 0 if phase == "done" else 3


def main(argv=None) -> int:
    args = parse_args(argv)
    config = gpu.load(args)
    if args.prepare:
        print(json.dumps(prepare(config, args), indent=1))
        return 0
    if args.job:
        run_job(config, args, args.job)
        return 0
    if not args.phase:
        raise SystemExit("study2: say --prepare or --phase calibration")
    if args.foreground:
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
        run = paths(config)["run"]
        run.mkdir(parents=True, exist_ok=True)
        (run / "orchestrator.pid").write_text(str(os.getpid()))
        calibrate(config, args, Queue(config, args, [f"0#{i}" for i in range(args.slots)]), gpu.Status(run))
        return 0
    return device_call(config, args)


if __name__ == "__main__":
    sys.exit(main())
