"""Study two's main run (issue 50; docs/results.md, "Study two: pre-registration", "Main run" and "Evaluation"),
in one or more holds of one GPU, from the committed calibration (``docs/results/study2_calibration.json``).

    python benchmarks/studies/study2.py --config configs/study2.yaml --phase main --arms grpo_s0 --slots 4 --wait-s 535 --out $OUT

Every hold re-makes S* by the deterministic SFT and checks it before anything else reads it: the weights' sha256 of
S* and SFT_best equal the calibration's, or (the registered fallback) S*'s validation counts at 1.0 with the same
seeds equal the calibration's task by task; else the run stops, before any held-out task is touched. Then:

* the **screen** (``screen:I``): S* samples shard I of the RL stream (``--screen-shard`` prompts in stream order)
  4 times at 1.0; the edge (1-3 right of 4, ``stream_edge``), in stream order, minus prompts whose reference fails
  (``admit``: the references judged in stream order until enough are admitted) are the RL prompts; S =
  ``rl_steps(E)``; every arm trains on the first 32 x S, the next 256 are the never-seen prompts (``prompts.json``);
* the **arms** this hold trains (``--arms``; default: every one not finished), each from S* (``arm:NAME``):
  ``grpo_s0``, ``grpo_s1``, ``control_s0`` (rewards shuffled within each group), ``rloo``, ``bon`` (8 samples a
  prompt, every correct one kept, one round, one epoch of SFT) and ``sftplus`` (one epoch of SFT on the prompts'
  references); Best-of-N and SFT+ at a constant rate, SFT's scheduled rate at step S* (``sft_rate_at``);
* each arm's **evaluations** as soon as it has trained (``train_and_evaluate``): ``unseen:LABEL`` (the never-seen prompts, 4
  samples at 1.0, sampling seed 1) and ``heldout:LABEL@TEMP`` (16 samples a task for SFT@S*, GRPO s0 and s1 and the
  control, 8 for RLOO, Best-of-N and SFT+, and 8 (one if greedy) at SFT_best's temperature for SFT_best and GRPO s0
  and s1). Every held-out evaluation is recorded in ``heldout_runs.jsonl``, an abandoned one too.

Weights cannot leave a hold: an arm whose held-out evaluations did not all finish in the hold it trained in is
trained again in a later one (its partial evaluations recorded as abandoned and kept under ``abandoned/``).
Everything else (the screen's samples and verdicts, admission, the prompts, finished evaluations) is recorded in
``<run_dir>/main`` and carried to the next hold (``collect``). ``study2_report.py`` turns it into the result.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import math
import os
import shutil
from pathlib import Path

import study2_criterion as reg
import study2_jobs as jobs
from study2_calibration import committed
from study2_jobs import counts, demo, evaluated, gpu, main_dir, paths, read_json
from study2_screen import (
    ARMS,
    ensure_prompt_dirs,
    job_admit,
    job_screen,
    screen_and_decide,
    screen_shards,
    stale_evaluations,
)

START_LABELS = ("sft_star", "sft_best")
K_AT_1 = {"sft_star": 16, "grpo_s0": 16, "grpo_s1": 16, "control_s0": 16, "rloo": 8, "bon": 8, "sftplus": 8,
          "sft_best": 8}
K_AT_BEST = 8  # at SFT_best's temperature (evaluate_on samples once when it is greedy)
UNSEEN_K, UNSEEN_SEED = reg.EDGE_K, 1  # the screen sampled with eval.seed (0): the never-seen check samples anew
EVAL_T = gpu.EVAL_TEMPERATURE  # "1.0"


# ---------------------------------------------------------------- S*, re-made in every hold and checked
def holds(config) -> list[dict]:
    return read_json(main_dir(config, "holds.json"), [])


def set_hold(config, hold: dict) -> None:
    rows = [h for h in holds(config) if h["hold"] != hold["hold"]] + [hold]
    jobs.atomic_json(main_dir(config, "holds.json"), sorted(rows, key=lambda h: h["hold"]))


def hold_now(config) -> dict:
    return holds(config)[-1]


def job_vcheck(config, args, what: str) -> None:
    """The registered fallback: a re-made checkpoint with other bytes validated at 1.0 with the calibration's
    samples a task and seeds, into ``vcheck/hold-H/step-S``."""
    step, hold = what.split("@")
    evaluated(config, str(jobs.checkpoint(config, step)), "validation",
              main_dir(config, "vcheck", hold, f"step-{step}"), EVAL_T, args.validation_k)


def calibration_counts(config, cal: dict, step: int) -> dict[str, tuple[int, int]]:
    """The calibration's validation counts of ``step``: committed in the result, else its carried results."""
    recorded = (cal.get("validation_counts") or {}).get(str(step))
    if recorded is not None:
        return {t: tuple(c) for t, c in recorded.items()}
    path = paths(config)["calibration"] / "val" / f"step-{step}"
    if (path / "results.jsonl").exists():
        return counts(path)
    raise SystemExit(f"study2: step {step}'s weights differ from the calibration's and its validation counts are "
                     "neither in the calibration result nor carried; the run stops")


def check_start(config, args, q: jobs.Queue, cal: dict) -> dict:
    """S* and SFT_best as the calibration made them: the same weights' sha256, or S*'s (and SFT_best's) validation
    counts equal task by task; else the run stops here, before any held-out task is touched."""
    hold = hold_now(config)
    steps = sorted({cal["s_star"], cal["sft_best"]})
    now = {str(s): jobs.weights_digest(jobs.checkpoint(config, s)) for s in steps}
    differ = [s for s in steps if now[str(s)] != cal["digests"].get(str(s))]
    q.run([f"vcheck:{s}@hold-{hold['hold']}" for s in differ])
    fallback = {}
    for s in differ:
        got = counts(main_dir(config, "vcheck", f"hold-{hold['hold']}", f"step-{s}"))
        fallback[str(s)] = got == calibration_counts(config, cal, s)
    check = {"digests": now, "digests_equal": not differ, "validation_equal": fallback,
             "passed": all(fallback.values())}
    set_hold(config, {**hold, "start_check": check})
    if not check["passed"]:
        raise SystemExit(f"study2: the re-made S* is not the calibration's (weights differ at {differ}, validation "
                         f"counts differ at {[s for s, ok in fallback.items() if not ok]}); the run stops before any "
                         "held-out task is touched")
    demo._log(f"hold {hold['hold']}: S* and SFT_best re-made and checked ({'same weights' if not differ else 'same validation counts'})")
    return check


def job_rejudge(config, args, what: str) -> None:
    """``KIND/DIR@DIGEST``: a done screen shard, never-seen check or held-out evaluation judged by another verifier,
    its recorded samples judged again by this one (no sampling; a held-out one is recorded again)."""
    kind, name = what.rsplit("@", 1)[0].split("/", 1)
    out = main_dir(config, kind, name)
    if kind == "screen":
        if not (out / "tasks" / "tasks.jsonl").exists():
            jobs.subset_in_order(paths(config)["stream"], out / "tasks",
                                 screen_shards(config, args)[int(name.split("-")[1])])
        jobs.rejudge(config, out, out / "tasks", "stream")
    elif kind == "unseen":
        ensure_prompt_dirs(config)
        jobs.rejudge(config, out, main_dir(config, "unseen_tasks"), "stream")
    else:
        jobs.rejudge(config, out, heldout_dir(config, args), "heldout")
        record_heldout(config, name, out, "rejudged by this hold's verifier")


# ---------------------------------------------------------------- the arms
def sft_rate_at(sft, step: int) -> float:
    """SFT's scheduled learning rate at optimizer step ``step``: transformers' linear schedule with warm-up
    (``ceil(max_steps x warmup_ratio)`` steps, as ``TrainingArguments.get_warmup_steps``), as the SFT run had it."""
    import torch
    from transformers import get_linear_schedule_with_warmup

    warm = math.ceil(sft.max_steps * sft.warmup_ratio)
    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=sft.learning_rate)
    schedule = get_linear_schedule_with_warmup(opt, warm, sft.max_steps)
    for _ in range(step):
        opt.step()
        schedule.step()
    return float(schedule.get_last_lr()[0])


def continued_sft(config, cal: dict):
    """One epoch at batch 32 (the recipe's), at a constant rate: SFT's scheduled rate at step S*."""
    return dataclasses.replace(config.sft, learning_rate=sft_rate_at(config.sft, cal["s_star"]),
                               lr_scheduler="constant", warmup_ratio=0.0, epochs=1.0, max_steps=-1)


def arm_config(config, args, arm: str):
    """The arm's config: from S*, on the arms' prompts, in ``main/arms/ARM``; seed 1 for ``grpo_s1``, else 0."""
    cal = committed(args)
    plan = ensure_prompt_dirs(config)
    run_dir = main_dir(config, "arms", arm)
    prompts = str(main_dir(config, "prompts"))
    s_star = jobs.checkpoint(config, cal["s_star"])
    cfg = dataclasses.replace(jobs.validation_eval(config),
                              run=dataclasses.replace(config.run, run_dir=str(run_dir), seed=int(arm == "grpo_s1")),
                              data=dataclasses.replace(config.data, source=prompts, sft_sources=[prompts]))
    if arm == "sftplus":
        return dataclasses.replace(cfg, model=dataclasses.replace(config.model, name_or_path=str(s_star)),
                                   sft=continued_sft(config, cal))
    jobs.share_model(config, run_dir, s_star)
    algo = {"rloo": "rloo", "bon": "best-of-n"}.get(arm, "grpo")
    rl = dataclasses.replace(config.rl, algo=algo, init_from="sft", learning_rate=float(cal["learning_rate"]),
                             steps=plan["steps"], shuffle_rewards=arm.startswith("control"))
    cfg = dataclasses.replace(cfg, rl=rl)
    if arm == "bon":
        cfg = dataclasses.replace(cfg, best_of_n=bon_settings(config), sft=continued_sft(config, cal))
    return cfg


def bon_settings(config):
    """Best-of-N as registered: GRPO's group size of samples a prompt, every correct one kept, one round, one epoch;
    sampled as a GRPO step samples (``rl.per_device_batch_size`` completions a generate call: 32 prompts x 8)."""
    k = config.rl.num_generations
    return dataclasses.replace(config.best_of_n, n=k, top_k=k, min_reward=config.reward.full_credit, rounds=1,
                               reward_weighted=False, tasks_per_round=None, sft_steps_per_round=-1,
                               batch_size=max(1, config.rl.per_device_batch_size // k))


def job_arm(config, args, arm: str) -> None:
    from tritonrl.pipeline import run_pipeline

    cfg = arm_config(config, args, arm)
    stage = "sft" if arm == "sftplus" else "rl"
    run_pipeline(dataclasses.replace(cfg, pipeline=dataclasses.replace(cfg.pipeline, stages=[stage],
                                                                       eval_models=["base"])), log=demo._log)


def model_spec(config, args, label: str) -> str:
    cal = committed(args)
    if label in START_LABELS:
        return str(jobs.checkpoint(config, cal["s_star" if label == "sft_star" else "sft_best"]))
    stage = {"rloo": "rloo", "bon": "best_of_n", "sftplus": "sft"}.get(label, "grpo")
    return f"{main_dir(config, 'arms', label)}:{stage}"


# ---------------------------------------------------------------- the evaluations
def heldout_evals(label: str, cal: dict) -> list[str]:
    """The held-out evaluations of ``label`` (``heldout:LABEL@TEMP``). At SFT_best's temperature 1.0, GRPO's and
    (when it is S*) SFT_best's 8 samples are the first 8 of their 16 at 1.0 (``study2_report``): no job."""
    best = cal["sft_best_temperature"]
    out = [f"heldout:{label}@{EVAL_T}"] if label != "sft_best" else []
    if label in ("grpo_s0", "grpo_s1") and best != EVAL_T:
        out.append(f"heldout:{label}@{best}")
    if label == "sft_best" and (best != EVAL_T or cal["sft_best"] != cal["s_star"]):
        out.append(f"heldout:sft_best@{best}")
    return out


def evals_of(label: str, cal: dict) -> list[str]:
    return ([f"unseen:{label}"] if label != "sft_best" else []) + heldout_evals(label, cal)


def heldout_dir(config, args) -> Path:
    """The held-out split; a rehearsal's first ``--heldout-n`` tasks of it (``main/heldout_tasks``)."""
    if not args.heldout_n:
        return paths(config)["heldout"]
    cut = main_dir(config, "heldout_tasks")
    if not (cut / "tasks.jsonl").exists():
        names = [r["name"] for r in demo.read_rows(paths(config)["heldout"])][:args.heldout_n]
        jobs.subset_in_order(paths(config)["heldout"], cut, names)
    return cut


def job_heldout(config, args, what: str) -> None:
    label, _, temperature = what.partition("@")
    k = K_AT_1[label] if temperature == EVAL_T else K_AT_BEST
    out = main_dir(config, "heldout", what)
    evaluated(config, model_spec(config, args, label), "heldout", out, temperature, k,
              tasks_dir=heldout_dir(config, args))
    record_heldout(config, what, out, "done")


def job_unseen(config, args, label: str) -> None:
    ensure_prompt_dirs(config)
    evaluated(config, model_spec(config, args, label), "stream", main_dir(config, "unseen", label), EVAL_T, UNSEEN_K,
              tasks_dir=main_dir(config, "unseen_tasks"), seed=UNSEEN_SEED)


def record_heldout(config, what: str, out: Path, status: str) -> None:
    """Every held-out evaluation ever made, a finished or an abandoned one, in ``heldout_runs.jsonl``."""
    found = counts(out) if (out / "results.jsonl").exists() else {}
    row = {"run": what, "status": status, "hold": hold_now(config)["hold"], "commit": demo._commit(),
           "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"), "tasks": len(found),
           "samples": sum(n for _, n in found.values()), "verifier": jobs.verifier_digest()[:12],
           "correct_at_1": sum(c / n for c, n in found.values()) / len(found) if found else None,
           "results": str(out.relative_to(paths(config)["main"]))}
    with open(main_dir(config, "heldout_runs.jsonl"), "a") as fh:
        fh.write(json.dumps(row) + "\n")


def complete(q: jobs.Queue, label: str, cal: dict) -> bool:
    """An arm is complete when its held-out evaluations are (the never-seen check is reported beside them)."""
    return all(q.done(name) for name in heldout_evals(label, cal))


def sampled(config, args, q: jobs.Queue, label: str, cal: dict) -> bool:
    """Every evaluation of ``label`` done or with all its samples recorded (an evaluation samples everything, then
    judges): what is left needs no weights, so a later hold judges the recorded samples (the job resumes)."""
    return all(q.done(name) or all_recorded(config, args, name) for name in evals_of(label, cal))


def all_recorded(config, args, name: str) -> bool:
    kind, _, what = name.partition(":")
    path = main_dir(config, kind, what, "completions.jsonl")
    if not path.exists():
        return False
    if kind == "unseen":
        wanted = len(read_json(main_dir(config, "prompts.json"))["unseen"]) * UNSEEN_K
    else:
        label, _, temperature = what.partition("@")
        k = 1 if temperature == "greedy" else K_AT_1[label] if temperature == EVAL_T else K_AT_BEST
        wanted = len(demo.read_rows(heldout_dir(config, args))) * k
    keys = {(r["task"], r["sample"]) for r in map(json.loads, path.read_text().splitlines()) if r.get("completion")
            is not None}
    return len(keys) >= wanted


def begin_hold(config, args, q: jobs.Queue, cal: dict) -> None:
    """A fresh machine (no ``main_hold.json`` beside the run): a new hold. SFT is made again, and an arm not finished in an earlier
    hold (its weights are gone) is abandoned, kept under ``abandoned/hold-H``, to be trained again."""
    previous = holds(config)
    number = previous[-1]["hold"] + 1 if previous else 1
    for label in ARMS:
        if not complete(q, label, cal) and not (q.done(f"arm:{label}") and sampled(config, args, q, label, cal)):
            abandon(config, q, label, cal, number - 1, with_arm=True)
    retrained = {}
    for label in (getattr(args, "retrain", None) or "").split(","):
        if label and q.done(f"arm:{label}"):  # ``--retrain``: its training is void, said why, and it trains again
            abandon(config, q, label, cal, number - 1, with_arm=True, why=f"retrained: {args.why}")
            retrained[label] = args.why
    q.forget("sft")
    set_hold(config, {"hold": number, "started": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
                      "machine": machine(), "arms": [], **({"retrained": retrained} if retrained else {})})


def machine() -> str:
    """The host a hold runs on, for the result's ``device``: its GPUs by name and count, and its cores (which judge
    the verdicts)."""
    import torch

    cores = f"{os.cpu_count()} cores"
    if not torch.cuda.is_available():
        return f"CPU ({cores})"
    names = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    return f"{len(names)}x {names[0]}, {cores}" if len(set(names)) == 1 else f"{', '.join(names)}, {cores}"


def abandon(config, q: jobs.Queue, label: str, cal: dict, hold: int, with_arm: bool,
            why: str = "cut short with the weights it sampled") -> None:
    """``label``'s unfinished evaluations (and with ``with_arm`` its training and finished ones: they came from the
    lost weights) moved under ``abandoned/hold-H``; a held-out one is recorded as abandoned, and ``why``."""
    gone = paths(config)["main"] / "abandoned" / f"hold-{hold}"
    for name in evals_of(label, cal):
        kind, _, what = name.partition(":")
        out = main_dir(config, kind, what)
        if not out.exists() or (q.done(name) and not with_arm):
            continue
        if kind == "heldout":
            record_heldout(config, what, out, f"abandoned: {why}")
        gone.mkdir(parents=True, exist_ok=True)
        shutil.move(str(out), str(gone / f"{kind}-{what}"))
        q.forget(name)
    if with_arm and main_dir(config, "arms", label).exists():
        gone.mkdir(parents=True, exist_ok=True)
        shutil.move(str(main_dir(config, "arms", label)), str(gone / f"arm-{label}"))
    if with_arm:
        q.forget(f"arm:{label}")


def hold_arms(config, args, q: jobs.Queue, cal: dict) -> list[str]:
    wanted = args.arms.split(",") if args.arms else list(ARMS)
    unknown = sorted(set(wanted) - set(ARMS))
    if unknown:
        raise SystemExit(f"study2: no arm {unknown}; the arms are {', '.join(ARMS)}")
    return [a for a in ARMS if a in wanted and not complete(q, a, cal)
            and not (q.done(f"arm:{a}") and sampled(config, args, q, a, cal))]


def known_good_first(config, status: gpu.Status) -> None:
    """Before the hold changes anything: the study's verifier, with its settings on this machine's stack, accepts
    the bundled reference kernels, else the run stops in one line (the third hold trained an arm on a reward that
    rejected every ``tl.sum`` kernel there: docs/results.md). RL and evaluations check again as they start."""
    from tritonrl.verify.parent.backends import make_verifier
    from tritonrl.verify.parent.known_good import check_known_good

    status.set("the verifier's known-good check")
    with make_verifier(config.verify) as verifier:
        check_known_good(verifier, "study2, this hold's verifier")
    demo._log("the verifier accepts the known-good kernels")


def run_main(config, args, q: jobs.Queue, status: gpu.Status) -> None:
    """The main run's part in this hold; each step skips what is done, so running it again resumes."""
    cal = committed(args)
    if config.verify.known_good:
        known_good_first(config, status)
    marker = paths(config)["run"] / "main_hold.json"  # on this machine only: never archived, never carried
    if not marker.exists() or not holds(config):
        begin_hold(config, args, q, cal)
        marker.write_text(json.dumps({"hold": hold_now(config)["hold"]}) + "\n")
    status.set(f"hold {hold_now(config)['hold']}: S* re-made and checked")
    q.run(["sft"])
    if not hold_now(config).get("start_check", {}).get("passed"):
        check = check_start(config, args, q, cal)
        if not check["digests_equal"]:  # the same validation, other bytes: S*'s cut-short evaluations start anew
            for label in START_LABELS:
                abandon(config, q, label, cal, hold_now(config)["hold"], with_arm=False)
    if not main_dir(config, "prompts.json").exists():
        status.set("the screen")
        screen_and_decide(config, args, q)
    ensure_prompt_dirs(config)
    arms = hold_arms(config, args, q, cal)
    status.set(f"arms {', '.join(arms) or '(none)'}, each evaluated as soon as it has trained")
    set_hold(config, {**hold_now(config), "arms": sorted(set(hold_now(config)["arms"]) | set(arms))})
    labels = [lab for lab in START_LABELS if any(not q.done(e) for e in evals_of(lab, cal))] if arms else []
    sampled_before = [a for a in ARMS if a not in arms and q.done(f"arm:{a}") and not complete(q, a, cal)]
    train_and_evaluate(q, cal, arms, (*sampled_before, *labels))
    status.set("re-judging")
    q.run(stale_evaluations(config, q, ("unseen", "heldout")))  # earlier holds' judged by another verifier
    left = [a for a in ARMS if not complete(q, a, cal)]
    status.set("done" if not left else "hold done")
    demo._log(f"arms left for a later hold: {left}" if left else "every arm trained and evaluated")


def train_and_evaluate(q: jobs.Queue, cal: dict, arms: list[str], labels: tuple[str, ...]) -> None:
    """The hold's arms, and the evaluations as soon as their weights exist, beside the arms still training:
    ``labels``' at once (S*, SFT_best, earlier holds' sampled arms), each arm's when it has trained. A hold cut
    short (the machine's 30 minutes; the third restarted hold lost two trained arms waiting for Best-of-N) keeps
    every evaluation that has sampled, and a later hold judges it. Once every arm has trained, the slots widen so
    that every evaluation left samples at once (``jobs.burst``)."""
    slots = q.gpus

    def ready() -> list[str]:
        trained = [a for a in arms if q.done(f"arm:{a}")]
        names = [e for lab in (*labels, *trained) for e in evals_of(lab, cal) if not q.done(e)]
        if len(trained) == len(arms):
            q.gpus = jobs.burst(slots, len(q.running) + len(names))
        return names

    try:  # recorded samples outlive the hold, the weights do not
        q.run([*(f"arm:{a}" for a in arms), *ready()], more=ready)
    finally:
        q.gpus = slots


def run(config, args, status: gpu.Status) -> None:
    run_main(config, args, jobs.Queue(config, args, jobs.slot_names(args.gpus, args.slots), "main",
                                      root=paths(config)["main"]), status)


JOBS = {"sft": jobs.job_sft, "vcheck": job_vcheck, "screen": job_screen, "rejudge": job_rejudge, "admit": job_admit,
        "arm": job_arm, "heldout": job_heldout, "unseen": job_unseen}


def run_job(config, args, name: str) -> None:
    jobs.run_job(config, args, JOBS, name)

