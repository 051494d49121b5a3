"""Study two's screen of the RL stream and the RL prompts (issue 50; docs/results.md, "Study two:
pre-registration", "Main run"): S* samples the stream in shards (``screen:I``), the edge prompts' references are
judged (``admit``), and ``prompts.json`` fixes S, the arms' prompts and the never-seen ones, each by the registered
functions (``stream_edge``, ``rl_steps``, ``verifier_calls``, ``equal_budget``). Part of ``study2_main``'s hold.
"""

from __future__ import annotations

import json

import study2_criterion as reg
import study2_jobs as jobs
from study2_calibration import committed
from study2_jobs import counts, demo, evaluated, gpu, main_dir, paths, read_json

ARMS = ("grpo_s0", "grpo_s1", "control_s0", "rloo", "bon", "sftplus")
EVAL_T = gpu.EVAL_TEMPERATURE  # "1.0"


# ---------------------------------------------------------------- sizes: the registered ones, or a rehearsal's
def per_step(config) -> int:
    return config.rl.per_device_batch_size // config.rl.num_generations  # 32 prompts a step as registered


def rl_steps(config, args, n_edge: int) -> int:
    """``rl_steps`` (S = min(60, floor(E / 32))) at the registered sizes; a rehearsal's smaller step and cap."""
    if per_step(config) == reg.PROMPTS_PER_STEP and args.steps_cap is None:
        return reg.rl_steps(n_edge)
    if not args.rehearsal:
        raise SystemExit("study2: the main run's sizes are the registered ones (32 prompts a step, at most 60 steps); "
                         "other sizes only in a --rehearsal")
    return min(args.steps_cap or reg.STEP_CAP, n_edge // per_step(config))


def verifier_calls(config, arm: str, steps: int) -> int:
    """``verifier_calls`` (completions judged, before the verify cache); a rehearsal's sizes scale it alike."""
    if per_step(config) == reg.PROMPTS_PER_STEP and config.rl.num_generations == reg.COMPLETIONS_PER_PROMPT:
        return reg.verifier_calls(arm, steps)
    return 0 if arm == "sftplus" else steps * per_step(config) * config.rl.num_generations


def unseen_n(args) -> int:
    return args.unseen_n if args.unseen_n is not None else 256


def needed_prompts(config, args) -> int:
    return (args.steps_cap or reg.STEP_CAP) * per_step(config) + unseen_n(args)


# ---------------------------------------------------------------- the screen and the prompts
def stream_order(config) -> list[str]:
    return json.loads((paths(config)["stream"] / "order.json").read_text())


def screen_shards(config, args) -> list[list[str]]:
    order = stream_order(config)
    return [order[i:i + args.screen_shard] for i in range(0, len(order), args.screen_shard)]


def job_screen(config, args, index: str) -> None:
    out = main_dir(config, "screen", f"shard-{index}")
    tasks_dir = out / "tasks"
    if not (tasks_dir / "tasks.jsonl").exists():
        jobs.subset_in_order(paths(config)["stream"], tasks_dir, screen_shards(config, args)[int(index)])
    evaluated(config, str(jobs.checkpoint(config, committed(args)["s_star"])), "stream", out, EVAL_T, reg.EDGE_K,
              tasks_dir=tasks_dir)


def stale_evaluations(config, q: jobs.Queue, kinds: tuple[str, ...]) -> list[str]:
    """``rejudge`` jobs for the done evaluations of ``kinds`` that another verifier judged (one cut short has its
    verdicts made anew when it resumes), so every figure compares one verifier's verdicts."""
    now = jobs.verifier_digest()
    found = []
    for kind in kinds:
        for d in sorted(main_dir(config, kind).glob("*")) if main_dir(config, kind).exists() else []:
            job = f"screen:{d.name.split('-')[1]}" if kind == "screen" else f"{kind}:{d.name}"
            if d.is_dir() and (d / "completions.jsonl").exists() and jobs.stale(d, q.done(job)):
                found.append(f"rejudge:{kind}/{d.name}@{now[:12]}")
    return found


def screened(config, args) -> tuple[list[str], dict[str, tuple[int, int]]]:
    """The done shards' prompts in stream order and their counts."""
    done = {json.loads(p.read_text())["job"] for p in main_dir(config, "jobs").glob("screen_*.json")}
    order, found = [], {}
    for i, names in enumerate(screen_shards(config, args)):
        if f"screen:{i}" in done:
            order += names
            found.update(counts(main_dir(config, "screen", f"shard-{i}")))
    return order, found


def edge_prompts(config, args, order: list[str], found: dict) -> list[str]:
    """``stream_edge``: the edge in stream order. A rehearsal's toy model is never at the edge, so a rehearsal
    fills the list up with the other screened prompts in stream order (``prompts.json`` says how many)."""
    edge = reg.stream_edge(order, found)
    if args.rehearsal and len(edge) < needed_prompts(config, args):
        at_edge = set(edge)
        edge += [t for t in order if t not in at_edge]
    return edge


def screen(config, args, q: jobs.Queue) -> None:
    """Every shard (the registered screen), or with ``--screen-enough`` shards in stream order until the edge
    prompts found are enough for S = 60 and the never-seen prompts (the same prompts, in the same order: a shard's
    samples do not depend on the others); then the shards another verifier judged are judged again."""
    shards = [f"screen:{i}" for i in range(len(screen_shards(config, args)))]
    if not args.screen_enough:
        q.run(shards)
    else:
        for start in range(0, len(shards), args.slots):
            if len(edge_prompts(config, args, *screened(config, args))) >= needed_prompts(config, args) * 1.1:
                break
            q.run(shards[start:start + args.slots])
    q.run(stale_evaluations(config, q, ("screen",)))


def job_admit(config, args, _arg) -> None:
    """The references of the edge prompts judged in stream order (256 at a time) until enough are admitted
    (``admission.json``: name -> correct); a prompt whose reference fails is kept out of every arm's prompts."""
    import dataclasses as dc

    from tritonrl.taskgen import default_verify_config
    from tritonrl.tasks import load_tasks
    from tritonrl.verify import Verifier, VerifyItem

    path = main_dir(config, "admission.json")
    admission = read_json(path, {})
    edge = edge_prompts(config, args, *screened(config, args))
    tasks = {t.name: t for t in load_tasks(str(paths(config)["stream"]))}
    verify = dc.replace(default_verify_config(), device="cpu", workers=config.verify.workers)
    with Verifier(verify) as verifier:
        while sum(admission.get(t, False) for t in edge) < needed_prompts(config, args):
            chunk = [t for t in edge if t not in admission][:256]
            if not chunk:
                break
            results = verifier.verify_many([VerifyItem(tasks[t], code=tasks[t].solution) for t in chunk])
            admission.update({t: bool(r.correct) for t, r in zip(chunk, results, strict=True)})
            jobs.atomic_json(path, admission)


def decide_prompts(config, args) -> dict:
    """``prompts.json``: the edge in stream order, those admitted, S, the arms' prompts and the never-seen ones."""
    order, found = screened(config, args)
    edge = edge_prompts(config, args, order, found)
    admission = read_json(main_dir(config, "admission.json"), {})
    admitted = [t for t in edge if admission.get(t)]
    steps = rl_steps(config, args, len(admitted))
    if steps == 0:
        raise SystemExit(f"study2: {len(admitted)} admitted edge prompts, under one step's {per_step(config)}: no arm "
                         "can train")
    trained = admitted[:steps * per_step(config)]
    unseen = admitted[len(trained):len(trained) + unseen_n(args)]
    calls = {arm: verifier_calls(config, arm, steps) for arm in ARMS}
    at_edge = reg.stream_edge(order, found)
    plan = {"screened": len(order), "stream": len(stream_order(config)), "edge": len(edge),
            "edge_share": len(at_edge) / len(order), "admission_judged": sum(t in admission for t in edge),
            "rejected": [t for t in edge if admission.get(t) is False], "admitted": len(admitted), "steps": steps,
            "per_step": per_step(config), "prompts": trained, "unseen": unseen, "verifier_calls": calls,
            "equal_budget": reg.equal_budget(calls), "screen_enough": bool(args.screen_enough),
            "rehearsal_filled": len(edge) - len(at_edge)}
    jobs.atomic_json(main_dir(config, "prompts.json"), plan)
    demo._log(f"RL prompts: {len(edge)} edge of {len(order)} screened ({plan['rehearsal_filled']} a rehearsal's "
              f"filler), {len(admitted)} admitted; S = {steps}")
    return plan


def ensure_prompt_dirs(config) -> dict:
    plan = read_json(main_dir(config, "prompts.json"))
    for name, key in (("prompts", "prompts"), ("unseen_tasks", "unseen")):
        if not (main_dir(config, name) / "tasks.jsonl").exists():
            jobs.subset_in_order(paths(config)["stream"], main_dir(config, name), plan[key])
    return plan


def screen_and_decide(config, args, q: jobs.Queue) -> dict:
    """The screen, admission and ``prompts.json``; with ``--screen-enough``, more of the stream is screened when the
    shards so far did not give enough admitted edge prompts."""
    while True:
        screen(config, args, q)
        q.forget("admit")
        q.run(["admit"])
        order, found = screened(config, args)
        admission = read_json(main_dir(config, "admission.json"), {})
        enough = sum(admission.get(t, False) for t in edge_prompts(config, args, order, found)) >= \
            needed_prompts(config, args)
        if enough or not args.screen_enough or len(order) == len(stream_order(config)):
            break
        args.screen_enough = False  # not enough from the shards so far: the rest of the stream is screened
    return decide_prompts(config, args)
