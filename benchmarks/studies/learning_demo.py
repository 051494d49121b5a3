"""Does RL through our verifier make a model better? The demonstration recipe, one command, resumable in chunks.

    python benchmarks/studies/learning_demo.py --config configs/demo.yaml --budget-s 540       # repeat until it exits 0
    python benchmarks/studies/learning_demo.py --config configs/demo.yaml --summarize-only     # the JSON from a finished run

Steps (each skipped when already done, so a killed or budget-stopped command is simply run again):
1. data: generated tasks (``tritonrl.taskgen``) into the dirs the config names: ``data.source`` (the RL
   train split), ``data.sft_sources[0]`` (the first ``--sft-n`` of those, by name: SFT sees part of the train
   split) and ``eval.tasks`` (the held-out split: op combinations never seen in training).
2. model: a Qwen2-architecture causal LM built here from scratch at ``model.name_or_path`` (no hub weights;
   tokenizer trained on the bundled code, ``tritonrl.common.llm.build_tiny_tokenizer``).
3. the pipeline stage by stage (``tritonrl.pipeline``): SFT, GRPO on the verifier's reward, eval of base, SFT, RL.
4. the control: GRPO from the same SFT model with the same steps and ``rl.shuffle_rewards=true``, in
   ``<run_dir>/control``, evaluated the same way.
5. the summary: ``<run_dir>/learning_demo.json`` (correct rate with a Wilson 95% interval per model, pass@k,
   paired bootstrap over held-out tasks for RL - SFT and control - SFT). ``--out`` copies it elsewhere.

``--budget-s``: training stages get SIGTERM at the deadline (they checkpoint and stop: exit 143, run again);
an evaluation is not started with less than ``--eval-reserve-s`` left. See docs/results.md.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import functools
import json
import math
import os
import random
import shutil
import signal
import sys
import threading
import time
from pathlib import Path

EXIT_RESUME = 143
MODELS = ("base", "sft", "rl", "control")


# ---------------------------------------------------------------- the model, built here
def build_demo_model(out_dir: str | Path, hidden: int, layers: int, heads: int, kv_heads: int, seed: int = 0,
                     vocab: int = 3000, corpus_dir: str | Path | None = None) -> Path:
    """A Qwen2 (Qwen2.5-Coder's architecture) causal LM with random weights and the local tokenizer; with
    ``corpus_dir`` (the train split: never held-out or validation), a whole-line BPE of ``vocab`` tokens trained
    on its tasks and references too."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    from tritonrl.common.llm import build_tiny_tokenizer

    out = Path(out_dir)
    if (out / "demo_model.json").exists():
        return out
    if corpus_dir is not None:
        from tritonrl.tasks import load_tasks

        tasks = load_tasks(str(corpus_dir))
        tokenizer = build_tiny_tokenizer(vocab, [t.source for t in tasks] + [t.solution for t in tasks if t.solution],
                                         whole_lines=True)
    else:
        tokenizer = build_tiny_tokenizer()
    config = Qwen2Config(vocab_size=len(tokenizer), hidden_size=hidden, intermediate_size=3 * hidden,
                         num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=kv_heads,
                         max_position_embeddings=4096, tie_word_embeddings=True, eos_token_id=tokenizer.eos_token_id,
                         pad_token_id=tokenizer.pad_token_id, bos_token_id=None)
    torch.manual_seed(seed)
    model = Qwen2ForCausalLM(config)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    params = sum(p.numel() for p in model.parameters())
    (out / "demo_model.json").write_text(json.dumps({"hidden": hidden, "layers": layers, "heads": heads,
                                                     "kv_heads": kv_heads, "params": params, "seed": seed,
                                                     "vocab": len(tokenizer), "tokenizer_corpus": str(corpus_dir)
                                                     if corpus_dir is not None else "bundled"}) + "\n")
    return out


# ---------------------------------------------------------------- data
def prepare_data(config, args) -> None:
    from tritonrl.taskgen import default_verify_config, generate_tasks

    verify = dataclasses.replace(default_verify_config(), device=config.verify.device, workers=config.verify.workers,
                                 workers_per_gpu=config.verify.workers_per_gpu)
    common = {"kernelbench_dir": args.kernelbench, "shape_scale": args.shape_scale, "verify_config": verify}
    train, sft, heldout = Path(config.data.source), Path(config.data.sft_sources[0]), Path(config.eval.tasks)
    validation = validation_dir(config)
    pool = heldout.parent / f"{heldout.name}_pool"
    def generate(n: int, seed: int, split: str, out: Path) -> None:
        _log(f"generating {n} {split} tasks in {out}, each reference verified (verdicts are appended to "
             f"{out / 'generation_progress.jsonl'} as they come; a stopped run resumes from there)")
        _log(generate_tasks(n, seed, split, out, **common).table())

    if not (train / "generation_report.json").exists():
        generate(args.train_n, args.seed, "train", train)
    if args.validation_n and not (pool / "generation_report.json").exists():
        generate(args.heldout_n + args.validation_n, args.seed + 1, "heldout", pool)
    elif not args.validation_n and not (heldout / "generation_report.json").exists():
        generate(args.heldout_n, args.seed + 1, "heldout", heldout)
    if args.validation_n and not (heldout / "tasks.jsonl").exists():
        held, val = split_by_signature(read_rows(pool), args.validation_n)
        subset(pool, validation, [r["name"] for r in val])
        subset(pool, heldout, [r["name"] for r in held])
    if not (sft / "tasks.jsonl").exists():
        subset(train, sft, [r["name"] for r in stratified(read_rows(train), args.sft_n)])


def validation_dir(config) -> Path:
    """The validation split (SFT's length is chosen on it, never on held-out): beside the held-out dir."""
    heldout = Path(config.eval.tasks)
    return heldout.parent / "validation"


def read_rows(directory: Path) -> list[dict]:
    return [json.loads(line) for line in (directory / "tasks.jsonl").read_text().splitlines() if line.strip()]


def _hash(text: str) -> str:
    import hashlib

    return hashlib.sha256(f"tritonrl-demo:{text}".encode()).hexdigest()


def split_by_signature(rows: list[dict], n_validation: int) -> tuple[list[dict], list[dict]]:
    """(held-out, validation): whole signatures (op combinations) go to validation, the families in turn and each
    family's signatures in hash order, until it has at least ``n_validation`` tasks, so no op combination is in
    both (both are unseen in training)."""
    by_family: dict[str, dict[str, list[dict]]] = {}
    for row in rows:
        by_family.setdefault(row["family"], {}).setdefault(row["signature"], []).append(row)
    queues = [sorted(by_family[f], key=_hash) for f in sorted(by_family)]  # families taken in turn
    validation: list[dict] = []
    while len(validation) < n_validation and any(queues):
        for queue in queues:
            if queue and len(validation) < n_validation:
                signature = queue.pop(0)
                validation += next(g[signature] for g in by_family.values() if signature in g)
    names = {r["name"] for r in validation}
    return [r for r in rows if r["name"] not in names], validation


def stratified(rows: list[dict], n: int) -> list[dict]:
    """``n`` tasks taken round-robin over the families (each family's tasks in hash order): every family is in
    the SFT subset, in near-equal numbers (not the first ``n`` by name, which were all elementwise)."""
    families: dict[str, list[dict]] = {}
    for row in sorted(rows, key=lambda r: _hash(r["name"])):
        families.setdefault(row["family"], []).append(row)
    chosen: list[dict] = []
    queues = [families[f] for f in sorted(families)]
    while len(chosen) < n and any(queues):
        for queue in queues:
            if queue and len(chosen) < n:
                chosen.append(queue.pop(0))
    return sorted(chosen, key=lambda r: r["name"])


def subset(src: Path, dst: Path, names: list[str]) -> None:
    """The tasks of ``src`` named in ``names``, with their references, in the same layout."""
    wanted = set(names)
    rows = [r for r in read_rows(src) if r["name"] in wanted]
    (dst / "solutions").mkdir(parents=True, exist_ok=True)
    for row in rows:
        (dst / f"level{row['level']}").mkdir(exist_ok=True)
        shutil.copy(src / f"level{row['level']}" / f"{row['name']}.py", dst / f"level{row['level']}")
        shutil.copy(src / "solutions" / f"{row['name']}.py", dst / "solutions")
    (dst / "tasks.jsonl").write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))


# ---------------------------------------------------------------- lengths: every reference must fit
def audit_lengths(config, dirs: dict[str, Path], margin: float = 1.1) -> dict:
    """Token counts, with the model's tokenizer and the configured prompt template, of every split's prompts and
    reference answers; raises ``SystemExit`` with one line when a reference (times ``margin``) would not fit the
    completion limits (``rl.max_completion_length``, ``eval.max_new_tokens``) or prompt + answer ``sft.max_length``:
    a task whose answer cannot fit cannot be solved, and SFT would learn cut kernels."""
    from tritonrl.common.llm import load_tokenizer
    from tritonrl.tasks import load_tasks
    from tritonrl.train.data import sft_rows

    tokenizer = load_tokenizer(config.model.name_or_path)  # as training and evaluation load it
    report: dict = {"margin": margin, "limits": {"rl.max_completion_length": config.rl.max_completion_length,
                                                 "eval.max_new_tokens": config.eval.max_new_tokens,
                                                 "sft.max_length": config.sft.max_length}, "splits": {}}
    problems = []
    answer_limit = min(config.rl.max_completion_length, config.eval.max_new_tokens)
    for split, directory in dirs.items():
        if not (directory / "tasks.jsonl").exists():
            continue
        rows = sft_rows(load_tasks(str(directory)), config.data.prompt_template)
        prompts = [len(tokenizer(tokenizer.apply_chat_template(r["prompt"], tokenize=False,
                                                               add_generation_prompt=True))["input_ids"])
                   for r in rows]
        answers = [len(tokenizer(r["completion"][0]["content"])["input_ids"]) + 1 for r in rows]  # + end token
        total = max(p + a for p, a in zip(prompts, answers))
        report["splits"][split] = {"tasks": len(rows), "prompt_max": max(prompts), "answer_max": max(answers),
                                   "answer_median": sorted(answers)[len(answers) // 2], "total_max": total}
        if max(answers) * margin > answer_limit:
            problems.append(f"{split}: a reference answer is {max(answers)} tokens, over {answer_limit}/{margin}")
        if total * margin > config.sft.max_length:
            problems.append(f"{split}: prompt + answer reach {total} tokens, "
                            f"over sft.max_length {config.sft.max_length}/{margin}")
    if problems:
        raise SystemExit("learning_demo: lengths do not fit: " + "; ".join(problems))
    return report


# ---------------------------------------------------------------- the plan: how long each phase will take
def measure(config, length_report: dict, tokens: int = 24) -> dict:
    """A short warm-up on this machine: seconds per generated token at the RL and eval batch sizes, per SFT
    training step, per GRPO update, and per verified completion (the train split's references, which run every
    trial, and cut copies of them, which fail early)."""
    import torch
    from transformers import AutoModelForCausalLM

    from tritonrl.tasks import load_tasks
    from tritonrl.verify import Verifier, VerifyItem

    if config.run.torch_threads:
        torch.set_num_threads(config.run.torch_threads)
    device = "cuda" if torch.cuda.is_available() and not config.rl.use_cpu else "cpu"
    model = AutoModelForCausalLM.from_pretrained(config.model.name_or_path).to(device)
    splits = length_report["splits"]
    prompt = max(s["prompt_max"] for s in splits.values())
    answer = max(s["answer_median"] for s in splits.values())

    def per_token(batch: int) -> float:
        """The faster of two timed generations (the first call of a shape pays one-off set-up)."""
        ids = torch.randint(10, 1000, (batch, prompt), device=device)
        times = []
        with torch.no_grad():
            for _ in range(2):
                start = time.monotonic()
                model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=tokens,
                               min_new_tokens=tokens, do_sample=True)
                times.append((time.monotonic() - start) / tokens)
        return min(times)

    def train_step(batch: int, length: int) -> float:
        ids = torch.randint(10, 1000, (batch, length), device=device)
        start = time.monotonic()
        model(input_ids=ids, labels=ids).loss.backward()
        model.zero_grad(set_to_none=True)
        return time.monotonic() - start

    tasks = load_tasks(config.data.source)[:4]
    items = [VerifyItem(t, code=t.solution) for t in tasks] + \
            [VerifyItem(t, code=t.solution[: len(t.solution) // 2]) for t in tasks]
    verifier = Verifier(config.verify)
    try:
        start = time.monotonic()
        verifier.verify_many(items)
        verify_s = (time.monotonic() - start) / len(items)  # wall per completion, the workers in parallel
    finally:
        verifier.close()
    return {"device": device, "prompt_tokens": prompt, "answer_median_tokens": answer,
            "gen_s_per_token_rl_batch": per_token(config.rl.per_device_batch_size),
            "gen_s_per_token_eval_batch": per_token(config.eval.batch_size),
            "sft_step_s": train_step(config.sft.per_device_batch_size, prompt + answer),
            "grpo_update_s": train_step(config.rl.per_device_batch_size, prompt + answer) * (1.3 if config.rl.beta else 1),
            "verify_s_per_completion": verify_s, "sample_tokens": tokens}


def plan(config, args, m: dict) -> dict:
    """Each remaining phase's estimated seconds from ``measure``'s figures. Generation is costed at the completion
    limit (a batch runs until its longest sample stops, and one rambling sample is enough): an upper bound."""
    import math as _m

    rl_tokens, eval_tokens = config.rl.max_completion_length, config.eval.max_new_tokens
    checkpoints = len(range(config.run.save_steps, config.sft.max_steps + 1, config.run.save_steps)) or 1

    def evaluation(n_tasks: int, k: int) -> float:
        samples = n_tasks * k
        return (_m.ceil(samples / config.eval.batch_size) * eval_tokens * m["gen_s_per_token_eval_batch"]
                + samples * m["verify_s_per_completion"])

    grpo_step = (rl_tokens * m["gen_s_per_token_rl_batch"] + config.rl.per_device_batch_size
                 * m["verify_s_per_completion"] + m["grpo_update_s"])
    phases = {"sft": config.sft.max_steps * m["sft_step_s"],
              "sft_select": checkpoints * evaluation(args.validation_n, args.validation_k) if args.validation_n else 0.0,
              "rl": config.rl.steps * grpo_step,
              "eval (base, sft, rl)": 3 * evaluation(args.heldout_n, config.eval.k),
              "control (rl + eval)": 0.0 if args.no_control else config.rl.steps * grpo_step
              + evaluation(args.heldout_n, config.eval.k),
              f"eval --turns {args.turns} (rl)": args.turns * evaluation(args.heldout_n, config.eval.k)
              if args.turns > 1 else 0.0}
    return {"measured": m, "grpo_step_s": grpo_step, "phases_s": {k: round(v) for k, v in phases.items()},
            "total_s": round(sum(phases.values()))}


def print_plan(report: dict) -> None:
    _log(f"plan (upper bounds, from a warm-up on {report['measured']['device']}; a GRPO step "
         f"{report['grpo_step_s']:.0f} s):")
    for name, seconds in report["phases_s"].items():
        _log(f"  {name:24} {seconds / 60:7.1f} min")
    _log(f"  {'total':24} {report['total_s'] / 60:7.1f} min")


# ---------------------------------------------------------------- stages, one at a time, within a budget
class Budget:
    """Seconds left; at the deadline a SIGTERM to this process makes a training stage checkpoint and stop."""

    def __init__(self, seconds: float | None):
        self.deadline = time.monotonic() + seconds if seconds else None
        if self.deadline:
            timer = threading.Timer(seconds, lambda: os.kill(os.getpid(), signal.SIGTERM))
            timer.daemon = True
            timer.start()

    def left(self) -> float:
        return math.inf if self.deadline is None else self.deadline - time.monotonic()


def run_stages(config, budget: Budget, eval_reserve_s: float, control: bool, args=None,
               record_dir: Path | None = None) -> bool:
    """Run every unfinished unit; False when the budget ran out first (run the command again). Each unit's wall
    time is added to ``<record_dir>/phase_times.json``; each finished held-out evaluation is appended to
    ``<record_dir>/heldout_runs.jsonl`` (every run against the held-out split is recorded)."""
    from tritonrl.pipeline import StageNotFinished, run_pipeline

    record_dir = Path(record_dir or config.run.run_dir)
    units = [("data", ["data"], []), ("sft", ["sft"], []), ("sft_select", [], []), ("rl", ["rl"], [])]
    units += [(f"eval_{m}", ["eval"], [m]) for m in config.pipeline.eval_models]
    if control:
        units = [("rl", ["rl"], []), ("eval_rl", ["eval"], ["rl"])]
    for name, stages, models in units:
        if budget.left() <= 0:
            _log(f"the budget is spent: stopping before {name}")
            return False
        if name == "sft_select":
            if args is None or not args.validation_n or (Path(config.run.run_dir) / "sft_selection.json").exists():
                continue
            with phase(record_dir, "sft_select"):
                select_sft(config, args)
            continue
        if _done(config, name):
            continue
        if name.startswith("eval") and budget.left() < eval_reserve_s:
            _log(f"{budget.left():.0f} s left, less than --eval-reserve-s: stopping before {name}")
            return False
        pipeline = dataclasses.replace(config.pipeline, stages=stages, eval_models=models or ["base"])
        try:
            with phase(record_dir, f"control_{name}" if control else name):
                run_pipeline(dataclasses.replace(config, pipeline=pipeline), log=_log)
        except StageNotFinished as exc:
            _log(str(exc))
            return False
        stopped = Path(config.run.run_dir) / "grpo" / "stopped_no_signal.json"
        if name == "rl" and not control and stopped.exists():
            raise SystemExit("learning_demo: " + json.loads(stopped.read_text())["message"] + " (the recipe has no "
                             "learning signal: change it, never the criterion)")
        if name.startswith("eval_"):
            arm = "control" if control else models[0]
            record_heldout_run(record_dir, arm, Path(config.run.run_dir) / "eval" / models[0], config)
    if not control and args is not None and args.turns > 1:
        out = Path(config.run.run_dir) / "eval" / f"rl_turns{args.turns}"
        if not (out / "DONE").exists():
            if budget.left() < eval_reserve_s:
                _log(f"{budget.left():.0f} s left, less than --eval-reserve-s: stopping before the multi-turn eval")
                return False
            with phase(record_dir, f"eval_rl_turns{args.turns}"):
                eval_turns(config, args.turns, out)
            record_heldout_run(record_dir, f"rl_turns{args.turns}", out, config)
    return True


def eval_turns(config, turns: int, out: Path) -> None:
    """``tritonrl eval --turns T`` of the RL model on the held-out split (refinement with the verifier's feedback)."""
    from tritonrl.common.stages import stage_name
    from tritonrl.evaluation.evaluate import evaluate
    from tritonrl.tasks import select_tasks

    tasks = select_tasks(config.eval.tasks, config.eval.level, config.eval.max_tasks)
    spec = f"{config.run.run_dir}:{stage_name(config.rl.algo)}"
    evaluate(spec, tasks, config.eval.k, dataclasses.replace(config.eval, turns=turns), config.verify, out,
             meta={"stage": f"rl_turns{turns}", "split": "heldout"}, resume=True)
    (out / "DONE").write_text("")


def correct_by_turn(results_jsonl: Path) -> dict[str, float]:
    """correct@1..T from a multi-turn evaluation's rows: a trajectory counts at turn t when any of its turns up to
    t is correct; each task's share of trajectories, averaged over tasks."""
    best: dict[tuple[str, int], int] = {}
    turns = 1
    for line in results_jsonl.read_text().splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        turn = int(row.get("turn", 1))
        turns = max(turns, turn)
        key = (row["task"], int(row.get("sample", 0)))
        if row["result"].get("correct"):
            best[key] = min(best.get(key, turn), turn)
        else:
            best.setdefault(key, 10**9)
    tasks = sorted({task for task, _ in best})
    out = {}
    for t in range(1, turns + 1):
        rates = []
        for task in tasks:
            firsts = [v for (name, _), v in best.items() if name == task]
            rates.append(sum(v <= t for v in firsts) / len(firsts))
        out[f"correct@{t}"] = sum(rates) / len(rates) if rates else None
    return out


class phase:
    """Adds the block's wall time to ``<record_dir>/phase_times.json`` (kept across chunks: a resumed phase sums)."""

    def __init__(self, record_dir: Path, name: str):
        self.path, self.name = Path(record_dir) / "phase_times.json", name

    def __enter__(self):
        self.start = time.monotonic()
        return self

    def __exit__(self, *exc) -> None:
        times = json.loads(self.path.read_text()) if self.path.exists() else {}
        times[self.name] = round(times.get(self.name, 0.0) + time.monotonic() - self.start, 1)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text(json.dumps(times, indent=1) + "\n")


def record_heldout_run(record_dir: Path, arm: str, eval_dir: Path, config) -> None:
    results = eval_dir / "results.jsonl"
    if not results.exists():
        return
    turns = correct_by_turn(results)  # single-turn rows too: correct@1 is then the plain per-task mean
    row = {"arm": arm, "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
           "commit": _commit(), "seed": config.run.seed, "k": config.eval.k, "tasks": len(per_task(results)),
           "correct_at_1": turns.get("correct@1"), "results": str(results),
           **({"by_turn": turns} if len(turns) > 1 else {})}
    with open(Path(record_dir) / "heldout_runs.jsonl", "a") as fh:
        fh.write(json.dumps(row) + "\n")


def sft_checkpoints(run_dir: Path) -> list[tuple[int, Path]]:
    """(step, path) of every complete SFT checkpoint, by step."""
    from tritonrl.train.checkpoints import _CHECKPOINT_RE

    root = run_dir / "sft" / "checkpoints"
    found = []
    for path in root.glob("checkpoint-*") if root.exists() else ():
        match = _CHECKPOINT_RE.match(path.name)
        if match and (path / "COMPLETE").exists():
            found.append((int(match.group(1)), path))
    return sorted(found)


def select_sft(config, args) -> dict:
    """SFT's length chosen on the validation split (never on held-out): every kept SFT checkpoint is evaluated
    there (``--validation-k`` samples a task), the best correct@1 wins (ties: the shorter), and the run's SFT
    model becomes that checkpoint. ``<run_dir>/sft_selection.json`` says what was compared and chosen."""
    from tritonrl.common.manifest import RunManifest
    from tritonrl.evaluation.evaluate import evaluate
    from tritonrl.tasks import load_tasks

    run_dir = Path(config.run.run_dir)
    manifest = RunManifest(run_dir)
    candidates = sft_checkpoints(run_dir)
    final = (manifest.stage("sft") or {}).get("outputs", {}).get("model")
    if final and not any(step >= config.sft.max_steps for step, _ in candidates):  # the last checkpoint is final
        candidates.append((config.sft.max_steps, Path(final)))
    tasks = load_tasks(str(validation_dir(config)))
    scores = []
    for step, path in candidates:
        out = run_dir / "validation" / f"sft-step-{step}"
        evaluate(str(path), tasks, args.validation_k, config.eval, config.verify, out,
                 meta={"stage": f"sft-step-{step}", "split": "validation"}, resume=True)
        rate = bootstrap(per_task(out / "results.jsonl"), resamples=1000)
        scores.append({"step": step, "model": str(path), **rate})
        _log(f"validation: SFT step {step}: correct@1 {rate['correct_at_1']:.3f}")
    best = max(scores, key=lambda r: (r["correct_at_1"], -r["step"]))
    manifest.record("sft", model=best["model"])
    selection = {"validation_tasks": len(tasks), "k": args.validation_k, "scores": scores, "chosen": best}
    (run_dir / "sft_selection.json").write_text(json.dumps(selection, indent=1) + "\n")
    _log(f"SFT length chosen on validation: step {best['step']} (correct@1 {best['correct_at_1']:.3f})")
    return selection


def _done(config, unit: str) -> bool:
    from tritonrl.common.manifest import RunManifest

    stage = config.rl.algo.replace("-", "_") if unit == "rl" else unit
    entry = RunManifest(config.run.run_dir).stage(stage)
    return bool(entry and entry.get("status") == "done")


def share_sft(source_run: str | Path, run_dir: str | Path) -> None:
    """``run_dir``'s manifest names ``source_run``'s SFT model as its own finished SFT stage (once), so its RL stage
    starts from exactly that model."""
    from tritonrl.common.manifest import RunManifest

    manifest = RunManifest(run_dir)
    if (manifest.stage("sft") or {}).get("status") != "done":
        sft = RunManifest(source_run).stage("sft")
        manifest.start("sft")
        manifest.record("sft", **{k: sft["outputs"][k] for k in ("model", "tokenizer", "base_model")})
        manifest.finish("sft", "done")


def control_config(config):
    """Same recipe from the same SFT model, rewards shuffled within each group, in ``<run_dir>/control``."""

    run_dir = Path(config.run.run_dir) / "control"
    share_sft(config.run.run_dir, run_dir)
    rl = dataclasses.replace(config.rl, shuffle_rewards=True, init_from="sft")
    return dataclasses.replace(config, rl=rl, run=dataclasses.replace(config.run, run_dir=str(run_dir)))


# ---------------------------------------------------------------- the summary
def wilson(correct: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """Wilson score 95% interval of a rate."""
    if n == 0:
        return (0.0, 1.0)
    p = correct / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (max(0.0, centre - half), min(1.0, centre + half))


def per_task(results_jsonl: Path) -> dict[str, tuple[int, int]]:
    """task -> (correct samples, samples)."""
    counts: dict[str, list[int]] = {}
    for line in results_jsonl.read_text().splitlines():
        row = json.loads(line)
        c = counts.setdefault(row["task"], [0, 0])
        c[0] += bool(row["result"].get("correct"))
        c[1] += 1
    return {t: (c, n) for t, (c, n) in counts.items()}


def bootstrap(tasks: dict[str, tuple[int, int]], resamples: int = 10000, seed: int = 0) -> dict:
    """correct@1 (the mean over tasks of each task's correct share of its k samples) with a per-task clustered
    bootstrap 95% interval: tasks are resampled, a task's samples move together (they are correlated)."""
    rates = [c / n for c, n in (tasks[t] for t in sorted(tasks))]
    return {"correct_at_1": sum(rates) / len(rates), "ci95": _percentile_ci(rates, resamples, seed)}


def _percentile_ci(values: list[float], resamples: int, seed: int) -> list[float]:
    """95% percentile interval of the mean of ``values`` (one per task), the tasks resampled with replacement."""
    rng = random.Random(seed)
    means = sorted(sum(rng.choice(values) for _ in values) / len(values) for _ in range(resamples))
    return [means[int(0.025 * resamples)], means[int(0.975 * resamples) - 1]]


def paired_bootstrap(a: dict, b: dict, resamples: int = 10000, seed: int = 0) -> dict[str, float]:
    """Mean over held-out tasks of (rate in ``a`` - rate in ``b``), with a percentile 95% interval from
    resampling tasks (both models' samples of a task move together: the pairing)."""
    tasks = sorted(set(a) & set(b))
    diffs = [a[t][0] / a[t][1] - b[t][0] / b[t][1] for t in tasks]
    low, high = _percentile_ci(diffs, resamples, seed)
    return {"mean": sum(diffs) / len(diffs), "ci95": [low, high], "ci95_low": low, "ci95_high": high,
            "tasks": len(tasks), "resamples": resamples}


# The criterion, fixed before any run against the held-out split (docs/results.md says the same); never changed
# after seeing held-out numbers.
CRITERION = {
    "statement": "RL - SFT >= 15 points correct@1 on held-out tasks, with the paired 95% interval's lower bound > 0; "
                 "and the shuffled-reward control not better than SFT (its paired interval includes 0 or lies "
                 "below 0)",
    "rl_minus_sft_min": 0.15,
    "rl_minus_sft_ci95_low_above": 0.0,
    "control_minus_sft_ci95_low_at_most": 0.0,
}


def criterion_met(rl_minus_sft: dict | None, control_minus_sft: dict | None) -> bool:
    if rl_minus_sft is None or control_minus_sft is None:
        return False
    return (rl_minus_sft["mean"] >= CRITERION["rl_minus_sft_min"]
            and rl_minus_sft["ci95"][0] > CRITERION["rl_minus_sft_ci95_low_above"]
            and control_minus_sft["ci95"][0] <= CRITERION["control_minus_sft_ci95_low_at_most"])


def signature_ops(signature: str) -> tuple[str, list[str]]:
    family, _, ops = signature.partition(":")
    return family, [op for op in ops.split(">") if op]


def edit_distance(a: list[str], b: list[str]) -> int:
    """Levenshtein distance between two op sequences (insert, delete, substitute one op)."""
    row = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        prev, row[0] = row[0], i
        for j, y in enumerate(b, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (x != y))
    return row[-1]


def nearest_training(heldout: list[dict], train: list[dict]) -> dict:
    """Each held-out task's distance (in ops) to the nearest training op combination of its family, and the
    histogram: 1 means one op added, dropped or swapped turns a training combination into this one."""
    by_family: dict[str, list[list[str]]] = {}
    for row in train:
        family, ops = signature_ops(row["signature"])
        by_family.setdefault(family, []).append(ops)
    per_task = {}
    for row in heldout:
        family, ops = signature_ops(row["signature"])
        seen = by_family.get(family) or []
        per_task[row["name"]] = min((edit_distance(ops, other) for other in seen), default=None)
    histogram: dict[str, int] = {}
    for d in per_task.values():
        histogram[str(d)] = histogram.get(str(d), 0) + 1
    return {"per_task": per_task, "histogram": dict(sorted(histogram.items()))}


ARM_PATHS = {"base": "eval/base", "sft": "eval/sft", "rl": "eval/rl", "control": "control/eval/rl"}


def summarize(run_dir: str | Path, device: str | None = None, tasks_dir: str | Path | None = None,
              train_dir: str | Path | None = None) -> dict:
    """``learning_demo.json``'s content from a finished run directory (missing models are left out)."""
    run_dir = Path(run_dir)
    tasks, summary = {}, {}
    for name, rel in ARM_PATHS.items():
        path = run_dir / rel
        if not (path / "results.jsonl").exists():
            continue
        tasks[name] = per_task(path / "results.jsonl")
        correct = sum(c for c, _ in tasks[name].values())
        n = sum(n for _, n in tasks[name].values())
        report = json.loads((path / "report.json").read_text()) if (path / "report.json").exists() else {}
        summary[name] = {**bootstrap(tasks[name]), "correct": correct, "samples": n,
                         "pass_at_k": report.get("pass_at_k", {})}
    if not summary:
        raise SystemExit(f"no evaluation results under {run_dir}")
    first = next(iter(tasks.values()))
    out = {"device": device or _device(), "machine": machine(), "commit": _commit(),
           "date": datetime.date.today().isoformat(), "run_dir": str(run_dir), "criterion": CRITERION,
           "heldout_tasks": len(first), "k": min(n for _, n in first.values()),
           "samples_per_task": min(n for _, n in first.values()), **summary}
    for name in ("rl", "control"):
        if name in tasks and "sft" in tasks:
            out[f"{name}_minus_sft"] = paired_bootstrap(tasks[name], tasks["sft"])
    out["criterion_met"] = criterion_met(out.get("rl_minus_sft"), out.get("control_minus_sft"))
    if tasks_dir is not None and (Path(tasks_dir) / "tasks.jsonl").exists():
        rows = read_rows(Path(tasks_dir))
        family_of = {r["name"]: r["family"] for r in rows}
        out["families"] = {f: {"tasks": sum(v == f for v in family_of.values()),
                               **{arm: _family_rate(tasks[arm], family_of, f) for arm in tasks}}
                           for f in sorted(set(family_of.values()))}
        if train_dir is not None and (Path(train_dir) / "tasks.jsonl").exists():
            out["nearest_training_combination"] = nearest_training(rows, read_rows(Path(train_dir)))
    for path in sorted((run_dir / "eval").glob("rl_turns*/results.jsonl")):
        out[path.parent.name] = correct_by_turn(path)
    for name, file in (("runs", "heldout_runs.jsonl"), ("wall_s", "phase_times.json")):
        path = run_dir / file
        if path.exists():
            out[name] = (json.loads(path.read_text()) if file.endswith(".json")
                         else [json.loads(line) for line in path.read_text().splitlines() if line.strip()])
    return out


def _family_rate(tasks: dict, family_of: dict, family: str) -> float | None:
    rates = [c / n for t, (c, n) in tasks.items() if family_of.get(t) == family]
    return sum(rates) / len(rates) if rates else None


def machine() -> dict:
    import platform

    info = {"platform": platform.platform(), "python": platform.python_version(), "cpus": os.cpu_count()}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["cpu"] = line.split(":", 1)[1].strip()
                break
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                info["memory_gib"] = round(int(line.split()[1]) / 2**20, 1)
                break
    except OSError:
        pass
    return info


@functools.lru_cache(maxsize=1)
def _commit() -> str | None:
    """This checkout's commit (``+dirty`` with uncommitted changes to tracked files), read once: the code that
    runs is what was there when the driver started, whatever is committed while it runs."""
    from tritonrl.util.gitinfo import commit

    return commit(root=Path(__file__).resolve().parent)


def plot(run_dir: Path, summary: dict) -> dict[str, str]:
    """``figures/learning_demo.png``: per GRPO step, the reward's mean and std and the share of zero-variance
    groups (RL and control); held-out correct@1 with its clustered 95% interval per arm."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = run_dir / "figures"
    out.mkdir(parents=True, exist_ok=True)
    fig, axes = plt.subplots(1, 3, figsize=(14, 3.6))
    for label, stage_dir in (("RL", run_dir / "grpo"), ("control", run_dir / "control" / "grpo")):
        health_path = stage_dir / "signal_health.json"
        if not health_path.exists():
            continue
        steps = json.loads(health_path.read_text()).get("steps") or []
        xs = [s["step"] for s in steps]
        for ax, key in ((axes[0], "reward"), (axes[0], "reward_std"), (axes[1], "true_zero_std_groups")):
            # true_zero_std_groups: our per-group figure (TRL's frac_reward_zero_std, with scale_rewards=batch,
            # asks only whether the whole batch was flat)
            values = [s.get(key) for s in steps]
            ax.plot(xs, [float("nan") if v is None else v for v in values], marker=".", label=f"{label} {key}")
    axes[0].set_title("reward per GRPO step")
    axes[1].set_title("share of groups with zero reward variance")
    for ax in axes[:2]:
        ax.set_xlabel("step")
        if ax.has_data():
            ax.legend(fontsize=7)
    arms = [a for a in ("base", "sft", "rl", "control") if a in summary]
    values = [summary[a]["correct_at_1"] for a in arms]
    errors = [[v - summary[a]["ci95"][0] for a, v in zip(arms, values)],
              [summary[a]["ci95"][1] - v for a, v in zip(arms, values)]]
    axes[2].bar(arms, values, yerr=errors, capsize=4, color=["#999", "#69c", "#3a3", "#c96"][:len(arms)])
    axes[2].set_title(f"held-out correct@1 ({summary.get('heldout_tasks')} tasks, k={summary.get('k')}), 95% CI")
    axes[2].set_ylim(0, 1)
    fig.tight_layout()
    path = out / "learning_demo.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return {"plot": str(path)}


def _device() -> str:
    try:
        import torch

        return torch.cuda.get_device_name(0) if torch.cuda.is_available() else f"CPU ({os.cpu_count()} cores)"
    except ImportError:
        return "unknown"


def _log(message: str) -> None:
    print(f"learning_demo: {message}", flush=True)


# ---------------------------------------------------------------- the command
def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", required=True)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="config override")
    parser.add_argument("--budget-s", type=float, default=None, help="stop (resumably) after this many seconds")
    parser.add_argument("--eval-reserve-s", type=float, default=240.0, help="do not start an eval with less left")
    parser.add_argument("--train-n", type=int, default=256, help="generated train-split tasks (RL)")
    parser.add_argument("--sft-n", type=int, default=64,
                        help="of which SFT sees N, taken round-robin over the families (stratified)")
    parser.add_argument("--heldout-n", type=int, default=96, help="generated held-out tasks (evaluation)")
    parser.add_argument("--validation-n", type=int, default=0,
                        help="validation tasks (unseen op combinations, disjoint from held-out) on which SFT's "
                             "length is chosen among its kept checkpoints; 0: no selection")
    parser.add_argument("--validation-k", type=int, default=4, help="samples per validation task")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--shape-scale", type=int, default=1)
    parser.add_argument("--kernelbench", default=None, help="decontaminate against this KernelBench clone")
    parser.add_argument("--hidden", type=int, default=512)
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--kv-heads", type=int, default=4)
    parser.add_argument("--vocab", type=int, default=0,
                        help="train a whole-line BPE of this many tokens on the train split's tasks and references "
                             "(0: the bundled-code tokenizer)")
    parser.add_argument("--no-control", action="store_true", help="skip the shuffled-reward control")
    parser.add_argument("--turns", type=int, default=3,
                        help="multi-turn eval of the RL model on held-out (correct@1..T); 1: none")
    parser.add_argument("--summarize-only", action="store_true")
    parser.add_argument("--plan", action="store_true",
                        help="make the data and model, measure a short warm-up, print each phase's estimated time "
                             "(plan.json) and exit")
    parser.add_argument("--max-total-s", type=float, default=None,
                        help="before training, estimate the phases (as --plan) and stop with a message when their "
                             "total is over this")
    parser.add_argument("--out", default=None, help="also write the summary JSON here")
    return parser.parse_args(argv)


def run_all(config, args, run_dir: Path) -> int | None:
    """Data, model, length audit, plan, the stages and the control; an exit code to stop with, or None when done."""
    budget = Budget(args.budget_s)
    with phase(run_dir, "generate_tasks"):
        prepare_data(config, args)
    build_demo_model(config.model.name_or_path, args.hidden, args.layers, args.heads, args.kv_heads, config.run.seed,
                     vocab=args.vocab, corpus_dir=config.data.source if args.vocab else None)
    audit = run_dir / "length_audit.json"
    if not audit.exists():
        dirs = {"train": Path(config.data.source), "sft": Path(config.data.sft_sources[0]),
                "validation": validation_dir(config), "heldout": Path(config.eval.tasks)}
        audit.parent.mkdir(parents=True, exist_ok=True)
        audit.write_text(json.dumps(audit_lengths(config, dirs), indent=1) + "\n")
    if args.plan or args.max_total_s:
        report = plan(config, args, measure(config, json.loads(audit.read_text())))
        (run_dir / "plan.json").write_text(json.dumps(report, indent=1) + "\n")
        print_plan(report)
        if args.max_total_s and report["total_s"] > args.max_total_s:
            _log(f"the plan takes up to {report['total_s'] / 60:.0f} min, over --max-total-s "
                 f"{args.max_total_s / 60:.0f} min: not starting (shrink the recipe, or raise the limit)")
            return 2
        if args.plan:
            return 0
    if not run_stages(config, budget, args.eval_reserve_s, control=False, args=args):
        return EXIT_RESUME
    if not args.no_control and not run_stages(control_config(config), budget, args.eval_reserve_s, control=True,
                                              args=args, record_dir=run_dir):
        return EXIT_RESUME
    return None


def main(argv=None) -> int:
    from tritonrl.config import PipelineConfig, load_config
    from tritonrl.errors import Stopped

    args = parse_args(argv)
    _commit()  # read now: held-out runs record the commit of the code that ran them
    config = load_config(args.config, args.set, schema=PipelineConfig)
    run_dir = Path(config.run.run_dir)
    if not args.summarize_only:
        try:
            code = run_all(config, args, run_dir)
        except Stopped as exc:  # generation or an evaluation stopped by the budget's SIGTERM: its work is kept
            _log(str(exc))
            return EXIT_RESUME
        if code is not None:
            return code
    summary = summarize(run_dir, tasks_dir=config.eval.tasks, train_dir=config.data.source)
    for name in ("sft_selection", "length_audit"):
        if (run_dir / f"{name}.json").exists():
            summary[name] = json.loads((run_dir / f"{name}.json").read_text())
    summary["figures"] = plot(run_dir, summary)
    text = json.dumps(summary, indent=1) + "\n"
    (run_dir / "learning_demo.json").write_text(text)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text)
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
