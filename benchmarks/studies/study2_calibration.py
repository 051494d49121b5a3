"""Study two's calibration (issue 50; train and validation data only; writes ``calibration.json``).

Jobs: ``sftcheck`` (the SFT set's references judged on the device: the same tasks byte for byte, else the run
stops), ``sft`` (deterministic, a checkpoint every 100 steps); for each checkpoint from ``--first-validated`` on,
``val:STEP`` (validation, 16 samples a task at 1.0), ``edge:STEP`` (128 calibration prompts, 4 samples: the edge
share) and ``entropy:STEP`` (token entropy of the validation samples); the host picks S* and SFT_best
(``select_start``) and stops when the futility rule says so; then ``valtemp:greedy`` and ``valtemp:0.6`` (SFT_best's
best temperature), ``lrscreen`` (S* on 1,024 other calibration prompts, 4 samples), ``lr:RATE`` (a short GRPO from
S* on their edge, one a rate) and ``lrval:RATE`` (validation, 8 samples a task); the host picks the rate
(``pick_learning_rate``). A later hold re-makes SFT and checks it (``remake:STEP``, the weights' digests) and judges
again what another verifier judged (``rejudge``).

``calibration.json`` is what the main phase reads, committed as ``docs/results/study2_calibration.json``; its keys:
``criterion``; ``checkpoints`` (per validated step: ``pass_at_1``, ``pass_at_16``, ``headroom``, ``edge_share``,
``entropy_per_token``); ``s_star``, ``sft_best``, ``headroom_val``, ``s_star_pass_at_1``, ``sft_best_pass_at_1``,
``futile`` (``select_start``); ``digests`` (step -> the weights' sha256, for S* and SFT_best);
``validation_counts`` (step -> task -> [correct, samples] at 1.0, for S* and SFT_best: the fallback check when a
re-made S* has other bytes); ``sizes``; ``rehearsal``; ``sft_best_temperatures`` and ``sft_best_temperature``;
``lr_prompts``; ``learning_rate`` (and ``lr_validation_pass_at_1``, ``lr_training``, or ``lr_check``); ``remade``.
"""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path

import study2_criterion as reg
import study2_jobs as jobs
from study2_jobs import counts, demo, evaluated, gpu, paths

COMMITTED = Path(__file__).resolve().parents[2] / "docs" / "results" / "study2_calibration.json"
REQUIRED_BY_MAIN = ("s_star", "sft_best", "headroom_val", "futile", "digests", "sft_best_temperature",
                    "learning_rate")


# ---------------------------------------------------------------- the calibration's jobs
def job_sft(config, args, arg) -> None:
    jobs.job_sft(config, args, arg)
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
    model = str(jobs.checkpoint(config, step))
    tasks = load_tasks(str(paths(config)["validation"]))[:prompts_per_call(model, gen)]
    texts = load_generator(model, gen).generate([build_messages(t, load_template(gen.prompt_template))
                                                 for t in tasks], gen.k)
    pairs = [(recorded.get((t.name, i)), text) for t, samples in zip(tasks, texts) for i, text in enumerate(samples)]
    result = {"step": int(step), "compared": len(pairs), "equal": sum(a == b for a, b in pairs)}
    out = calib_dir(config, "remake", f"step-{step}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result) + "\n")


def validated_steps(config, args) -> list[int]:
    return [s for s, _ in demo.sft_checkpoints(paths(config)["run"]) if s >= args.first_validated]


def calib_dir(config, *parts: str) -> Path:
    return paths(config)["calibration"].joinpath(*parts)


def job_val(config, args, step: str) -> None:
    evaluated(config, str(jobs.checkpoint(config, step)), "validation", calib_dir(config, "val", f"step-{step}"), "1.0",
              args.validation_k)


def job_edge(config, args, step: str) -> None:
    evaluated(config, str(jobs.checkpoint(config, step)), "calib_edge", calib_dir(config, "edge", f"step-{step}"), "1.0",
              reg.EDGE_K)


def job_rejudge(config, args, what: str) -> None:
    """``KIND/step-S`` judged by an earlier verifier: its recorded samples judged again by this one (no sampling),
    so every verdict the calibration compares comes from the same verifier."""
    kind, step_dir = what.split("@")[0].split("/")
    split = {"val": "validation", "edge": "calib_edge"}[kind]
    jobs.rejudge(config, calib_dir(config, kind, step_dir), paths(config)[split], split)


def job_entropy(config, args, step: str) -> None:
    out = calib_dir(config, "entropy", f"step-{step}.json")
    completions = calib_dir(config, "val", f"step-{step}") / "completions.jsonl"
    value = token_entropy(jobs.checkpoint(config, step), paths(config)["validation"], completions,
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
    model = jobs.checkpoint(config, calibration(config)["sft_best"])
    evaluated(config, str(model), "validation", calib_dir(config, "valtemp", temperature), temperature,
              args.validation_k)


def job_lrscreen(config, args, _arg) -> None:
    model = jobs.checkpoint(config, calibration(config)["s_star"])
    evaluated(config, str(model), "calib_lr", calib_dir(config, "lrscreen"), "1.0", reg.EDGE_K)


def lr_name(rate: float) -> str:
    return f"{rate:g}"


def lr_arm_config(config, args, rate: str):
    """GRPO from S* at ``rate`` on the rate check's edge prompts (the same ones, in the same order, for every rate),
    ``--lr-steps`` steps, seed 0, in ``calibration/lr/RATE``."""
    run_dir = calib_dir(config, "arms", f"lr-{rate}")
    jobs.share_model(config, run_dir, jobs.checkpoint(config, calibration(config)["s_star"]))
    rl = dataclasses.replace(config.rl, init_from="sft", learning_rate=float(rate), steps=args.lr_steps)
    data = dataclasses.replace(config.data, source=str(calib_dir(config, "lr_prompts")))
    return dataclasses.replace(config, rl=rl, data=data, run=dataclasses.replace(config.run, run_dir=str(run_dir)))


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
    chosen = (choice["s_star"], choice["sft_best"])
    choice["digests"] = {str(s): jobs.weights_digest(jobs.checkpoint(config, s)) for s in chosen}
    choice["validation_counts"] = {str(s): {t: list(c) for t, c in counts(calib_dir(config, "val", f"step-{s}")).items()}
                                   for s in chosen}  # the main run's fallback check of a re-made S*
    demo._log(f"calibration: S* = step {choice['s_star']} (H_val {choice['headroom_val']:.3f}), SFT_best = step "
              f"{choice['sft_best']}; futile: {choice['futile']}")
    sizes = {k: getattr(args, k) for k in jobs.SIZE_KEYS if getattr(args, k, None) is not None}
    return write_calibration(config, {"checkpoints": scores, **choice, "sizes": sizes})


def stale_verdicts(config, q: jobs.Queue) -> list[str]:
    """The done validations and edge screens whose verdicts another verifier made (or none recorded which)."""
    now = jobs.verifier_digest()
    return [f"rejudge:{kind}/{d.name}@{now[:12]}" for kind in ("val", "edge")
            for d in sorted(calib_dir(config, kind).glob("step-*"))
            if jobs.stale(d, q.done(f"{kind}:{d.name.split('-')[1]}"))]


def check_remade(config, q: jobs.Queue) -> None:
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
    now = {str(step): jobs.weights_digest(ckpt) for step, ckpt in demo.sft_checkpoints(paths(config)["run"])}
    if path.exists():
        before = json.loads(path.read_text())
        differ = sorted((s for s in before if now.get(s) != before[s]), key=int)
        if differ:
            raise SystemExit(f"study2: the re-made SFT checkpoints differ from the first ones at steps {differ}")
        demo._log(f"re-made SFT: every checkpoint's weights equal the first run's ({len(before)} compared)")
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(now, indent=1) + "\n")


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


def calibrate(config, args, q: jobs.Queue, status: gpu.Status) -> None:
    """The calibration, phase by phase; each phase skips what is done, so running it again resumes."""
    run = paths(config)["run"]
    if not (run / "length_audit_device.json").exists():  # the tokenizer built here, from the same SFT set
        jobs.build_model(config, args)
        audit = demo.audit_lengths(config, {s: paths(config)[s] for s in ("sft", "validation", "calib_edge", "calib_lr")})
        audit["tokenizer_sha256"] = jobs.tokenizer_digest(config)
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




JOBS = {"sftcheck": lambda c, a, _: check_sft_set(c), "sft": job_sft, "remake": job_remake, "rejudge": job_rejudge,
        "val": job_val, "edge": job_edge, "entropy": job_entropy, "valtemp": job_valtemp,
        "lrscreen": job_lrscreen, "lr": job_lr, "lrval": job_lrval}


def run_job(config, args, name: str) -> None:
    """One calibration job in this process; the calibration never reads the held-out split (it is not even on the
    machine), so every job's config names the validation split as ``eval.tasks``."""
    jobs.run_job(jobs.validation_eval(config), args, JOBS, name)


def run(config, args, status: gpu.Status) -> None:
    calibrate(config, args, jobs.Queue(config, args, jobs.slot_names(args.gpus, args.slots), "calibration"), status)


def load_committed(path: Path, rehearsal: bool = False) -> dict:
    """The committed calibration result the main phase starts from, checked for what it needs: a one-line error
    when it is missing, unfinished, or stopped by the futility rule."""
    if not path.exists():
        raise SystemExit(f"study2: the main phase needs the committed calibration result {path} (--phase "
                         "calibration's calibration.json, committed before the main run); none found")
    result = json.loads(path.read_text())
    missing = [k for k in REQUIRED_BY_MAIN if k not in result]
    if missing:
        raise SystemExit(f"study2: {path} is not a finished calibration (no {', '.join(missing)})")
    if result["futile"] and not rehearsal:
        raise SystemExit(f"study2: the futility rule stopped the study (H_val {result['headroom_val']:.3f} < "
                         f"{reg.FUTILITY_HEADROOM}); there is no main run")
    return result


def committed(args) -> dict:
    """``load_committed`` of ``--calibration`` (default: the committed ``docs/results/study2_calibration.json``)."""
    return load_committed(Path(args.calibration or COMMITTED), rehearsal=args.rehearsal)
