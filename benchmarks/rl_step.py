"""Where an RL step goes on one GPU: generation, the reward's wait, forward/backward, optimizer, the rest.

    bash scripts/device_wheels.sh install && PYTHONPATH=/tmp/site:src python3 benchmarks/rl_step.py \
        --out $OUT/rl_step_1gpu.json                     # one H200: the 1.5B-shaped model, fast and eager paths
    PYTHONPATH=src python benchmarks/rl_step.py --cpu-rehearsal --out /tmp/rl_step_cpu.json   # here, ~1-2 min

The model has Qwen2.5-Coder-1.5B's shape with random weights in bfloat16 (``rehearsal_multi_gpu.build_model``,
no download), LoRA r16 on every projection, gradient checkpointing on. Each path is the project's GRPO stage
(``tritonrl.train.rl.build_trainer`` on TRL's ``GRPOTrainer``) for a few steps of ``--completions`` completions
(8 per prompt) of exactly ``--tokens`` tokens (``min_new_tokens`` = ``max_new_tokens``: EOS cannot end them
early, so every step generates the same tokens):
- ``fast``: ``rl.generation=fast`` (static cache sized once, decode step compiled with CUDA graphs) and
  ``rl.generation_chunks=--chunks`` (each chunk verified in the background while the next is generated);
  ``rl.generation_merge_lora`` as ``--merge-lora`` / ``--no-merge-lora`` says (merged by default, as the
  project's default; ``merged_lora`` in the JSON says whether it took);
- ``eager``: ``rl.generation=eager``, ``rl.generation_chunks=1``: TRL's own path, the reward after generation.
``--steps-per-generation S`` (fast path only; a multiple of the gradient accumulation steps A): one generation of
S / A steps' completions, in ``--chunks`` chunks, serves S / A optimizer steps (verl's rollout batch split into
mini-batches; TRL's ``steps_per_generation``, whose later steps are off-policy by up to S / A - 1 updates, with
TRL's importance weights): with S = 4A and 4 chunks each chunk is one step's batch, and three chunks' verification
runs beside the next chunk's generation, the last one's beside TRL's old log-prob pass. With
``--reward-beside-training`` (``rl.reward_beside_training``) each chunk is also scored as its own step's batch, so
step k waits only for chunk k's verdicts, and the later chunks' verification runs beside the steps before theirs too.
The figures then count from the second generation on, per optimizer step.
Completions of a random-weight model all fail at extraction in microseconds, so the reward judges real
candidates in their place (``CandidateReward``): per task, in turn, its bundled solution, a slower right one, a
wrong constant, a PyTorch fallback and a syntax error (``verify_scaling.answers``), each a distinct file, so the
verifier does the GPU work of an RL step whose policy writes kernels (compile, trials, timing), with
``--verify-workers`` candidates in flight on the GPU. The overlap can hide at most the generation's seconds: when
the verification of a step takes longer than its generation, ``reward_hidden_fraction`` is about generation /
verification, and the step waits for the rest (``phases_s.reward_wait``).

Written to ``--out`` (one JSON object; the fast path's figures at the top level, the eager path's under
``eager``): ``device``, ``model_parameters``, ``completions_per_step``, ``completion_tokens``,
``generation_tokens_per_s`` (completion tokens over the seconds inside TRL's generate calls, steps after the
first), ``step_s`` (mean of the steps after the first), ``phases_s`` (per step: ``generation``, ``reward_wait``
(the step waiting for verification), ``forward_backward`` (training_step less its generation batch),
``optimizer``, ``other``), ``verification_s`` and ``reward_hidden_fraction`` (1 - wait / verification seconds),
``recompiles_after_step_1`` (graphs dynamo built after step 1: 0 means no recompile), ``dynamo`` (graph breaks by
reason, inductor's CUDA-graph counters), ``peak_memory_gib``
(torch's peak allocation), ``first_step_s`` (with the compile), per-step rows, and ``fast_over_eager`` (the
generation tokens/s ratio). ``done_when`` checks issue 52's targets (null on a CPU: they are GPU targets). A path
that raises is recorded as ``{"error": ...}`` and the next path still runs (one device call holds both).

``--cpu-rehearsal``: the project's tiny model, 16 completions x 16 tokens, 2 Level-1 tasks judged on the CPU
(Triton's interpreter), dynamo's ``eager`` backend (tracing, no code generation): the same code path and JSON
shape in about a minute. Its seconds are wall-clock seconds of a shared 2-core CPU, not GPU figures.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from verify_scaling import answers  # noqa: E402

KINDS = ["right", "slow", "wrong_constant", "pytorch_fallback", "syntax_error"]
CPU_KINDS = ["right", "wrong_constant", "pytorch_fallback", "syntax_error"]  # no "slow": the interpreter crawls
GPU_TASKS = "l1_relu,l1_gelu,l2_gemm_bias_relu,l2_swiglu,l2_add_relu_mul_residual,l2_layernorm_gelu,l1_softmax,l1_matmul"
CPU_TASKS = "l1_relu,l1_gelu"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cpu-rehearsal", action="store_true", help="tiny sizes on the CPU (the same JSON shape)")
    p.add_argument("--out", default=str(HERE / "results" / "rl_step_1gpu.json"))
    p.add_argument("--model-dir", default=None, help="where the model is built (reused); default a temp dir")
    p.add_argument("--completions", type=int, default=None, help="completions per step (default 64; CPU 16)")
    p.add_argument("--tokens", type=int, default=None, help="tokens per completion (default 512; CPU 16)")
    p.add_argument("--micro-batch", type=int, default=None, help="completions per forward/backward (16; CPU 8)")
    p.add_argument("--chunks", type=int, default=4, help="fast path: rl.generation_chunks")
    p.add_argument("--fast-steps", type=int, default=None,
                   help="steps of the fast path (the first compiles; default 3, or two generations' steps)")
    p.add_argument("--steps-per-generation", type=int, default=None,
                   help="fast path: rl.trl.steps_per_generation, a multiple of the gradient accumulation steps: one "
                        "generation (in --chunks chunks) serves that many micro-batches, several optimizer steps "
                        "(verl's rollout batch over mini-batches). Default TRL's: one generation a step")
    p.add_argument("--reward-beside-training", action="store_true",
                   help="fast path, with --steps-per-generation = --chunks x the accumulation steps: "
                        "rl.reward_beside_training (each chunk scored as its own optimizer step's batch, so a step "
                        "waits only for its chunk's verdicts and the later ones are verified beside the steps before)")
    p.add_argument("--switch-interval-ms", default="0.5", help="fast path, chunks > 1: "
                   "rl.generation_switch_interval_ms (Python's thread switch interval while a chunk is generated "
                   "beside the verification; 'none': Python's own 5 ms, the control)")
    p.add_argument("--eager-steps", type=int, default=2, help="steps of the eager path")
    p.add_argument("--profile-generation", action="store_true",
                   help="fast path: one more generation, its first generate call under torch.profiler (the ops by "
                        "self CPU and device time go to the JSON's 'profile'); its steps are left out of the figures")
    p.add_argument("--paths", default="fast,eager", help="which paths, in order (fast first: a run cut short "
                   "still has the main figures)")
    p.add_argument("--tasks", default=None, help="bundled task names (comma-separated)")
    p.add_argument("--verify-workers", type=int, default=8, help="GPU: verify.workers_per_gpu (candidates in "
                   "flight beside training; timing stays exclusive)")
    p.add_argument("--warm-children", action="store_true", help="GPU: verify.warm_children (a candidate child a "
                   "place started ahead, CUDA up, between the reward's batches; a CUDA context each on the GPU)")
    p.add_argument("--warm-spares", action="store_true", help="GPU, with --warm-children: verify.warm_spares (each "
                   "child a candidate takes replaced at once, while the batch runs)")
    p.add_argument("--no-timing", action="store_true", help="GPU: verify.timing=false (the correctness-only reward "
                   "most training runs; timing runs hold the GPU exclusively, so they are never beside generation)")
    p.add_argument("--merge-lora", action=argparse.BooleanOptionalAction, default=True,
                   help="fast path: rl.generation_merge_lora (the adapter merged into the base weights for "
                   "generation; the default, as the project's: --no-merge-lora for the unmerged adapter)")
    p.add_argument("--compile-backend", default=None, help="torch.compile backend (inductor; CPU rehearsal eager)")
    p.add_argument("--compile-mode", default="reduce-overhead", help="torch.compile mode for the decode step")
    args = p.parse_args(argv)
    cpu = args.cpu_rehearsal
    args.completions = args.completions or (16 if cpu else 64)
    args.tokens = args.tokens or (16 if cpu else 512)
    args.micro_batch = args.micro_batch or (8 if cpu else 16)
    args.tasks = args.tasks or (CPU_TASKS if cpu else GPU_TASKS)
    args.compile_backend = args.compile_backend or ("eager" if cpu else "inductor")
    accumulation = args.completions // min(args.micro_batch, args.completions)
    if args.steps_per_generation is not None and (args.steps_per_generation < accumulation
                                                  or args.steps_per_generation % accumulation):
        raise SystemExit(f"rl_step: --steps-per-generation {args.steps_per_generation} must be a multiple of the "
                         f"gradient accumulation steps ({accumulation} = --completions / --micro-batch)")
    args.cycle = (args.steps_per_generation or accumulation) // accumulation  # optimizer steps a generation serves
    if args.reward_beside_training and args.cycle != args.chunks:
        raise SystemExit(f"rl_step: --reward-beside-training needs a chunk a step: --steps-per-generation "
                         f"{args.steps_per_generation} / {accumulation} accumulation steps = {args.cycle}, not "
                         f"--chunks {args.chunks}")
    args.fast_steps = args.fast_steps or max(3, 2 * args.cycle)
    args.profile_from = args.fast_steps + 1 if args.profile_generation else None  # the extra generation's steps
    return args


# ------------------------------------------------------------------------------------------------ the reward
def candidate_pool(tasks: list, kinds: list[str]) -> dict[str, list[tuple[str, str]]]:
    """task key -> [(kind, code)] in the order the reward hands them out."""
    return {t.key: [(kind, code) for kind, code in answers(t).items() if kind in kinds] for t in tasks}


def candidate_reward(tasks: list, kinds: list[str], verify_config):
    """A ``VerifierReward`` that judges real candidates in place of the model's completions (in turn per task,
    each a distinct file), so the verifier does a kernel-writing policy's work."""
    from tritonrl.common.ranks import rank_verifier
    from tritonrl.train.reward_adapters import VerifierReward
    from tritonrl.verify import VerifyItem

    pool = candidate_pool(tasks, kinds)

    class CandidateReward(VerifierReward):
        handed = 0
        kinds_seen: dict[str, int] = {}

        def item(self, task_key: str, completion):
            candidates = pool[task_key]
            kind, code = candidates[self.handed % len(candidates)]
            self.handed += 1
            self.kinds_seen[kind] = self.kinds_seen.get(kind, 0) + 1
            return VerifyItem(self.tasks[task_key], code=f"# candidate {self.handed}\n{code}")

    return CandidateReward({t.key: t for t in tasks}, verifier=rank_verifier(verify_config), group_size=8)


# ------------------------------------------------------------------------------------------------ the clock
def make_clock(trainer, reward, cuda: bool, profile_from: int | None = None):
    """A callback timing each optimizer step's phases (methods of ``trainer`` and ``reward`` wrapped). From step
    ``profile_from`` on, the first generate call runs under torch's profiler (``clock.profile``) and the steps are
    marked ``profiled`` (left out of the figures)."""
    import torch
    from transformers import TrainerCallback

    from tritonrl.train.fast_generation import compiled_graphs

    def sync():
        if cuda:
            torch.cuda.synchronize()

    now: dict[str, float] = {}
    profiled: dict[str, str] = {}

    def run(inner, key, args, kwargs):
        if key != "generation" or not now.get("profiling") or profiled:
            return inner(*args, **kwargs)
        from torch.profiler import ProfilerActivity, profile

        activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
        with profile(activities=activities) as prof:
            out = inner(*args, **kwargs)
            sync()
        table = prof.key_averages()
        profiled["by_self_cpu"] = table.table(sort_by="self_cpu_time_total", row_limit=25)
        if cuda:
            profiled["by_self_device"] = table.table(sort_by="self_device_time_total", row_limit=25)
        return out

    def timed(obj, name: str, key: str, count=None):
        inner = getattr(obj, name)

        def wrapper(*args, **kwargs):
            sync()
            start = time.perf_counter()
            out = run(inner, key, args, kwargs)
            sync()
            now[key] = now.get(key, 0.0) + time.perf_counter() - start
            if count is not None:
                now[count] = now.get(count, 0) + sum(len(ids) for ids in out[0])
            return out

        setattr(obj, name, wrapper)

    timed(trainer, "_generate_single_turn", "generation", count="tokens")
    timed(trainer, "_prepare_inputs", "prepare")
    timed(trainer, "training_step", "training_step")

    class StepClock(TrainerCallback):
        rows: list[dict] = []
        graphs_after_step_1: int | None = None
        profile = profiled

        def on_step_begin(self, args, state, control, **kwargs):
            sync()
            now.clear()
            now["begin"] = time.perf_counter()
            now["rewards_before"] = len(reward.health)
            now["profiling"] = profile_from is not None and state.global_step + 1 >= profile_from

        def on_pre_optimizer_step(self, args, state, control, **kwargs):
            sync()
            now["optimizer_begin"] = time.perf_counter()

        def on_optimizer_step(self, args, state, control, **kwargs):
            sync()
            now["optimizer"] = time.perf_counter() - now["optimizer_begin"]

        def on_step_end(self, args, state, control, **kwargs):
            sync()
            step_s = time.perf_counter() - now["begin"]
            # the reward runs in the steps that generate (one in --steps-per-generation / accumulation)
            health = reward.health[-1] if len(reward.health) > now["rewards_before"] else {}
            verify_s = health.get("verify/time_s", 0.0)
            wait_s = health.get("verify/wait_s", verify_s)  # the serial path waits for all of it
            phases = {"generation": now.get("generation", 0.0), "reward_wait": wait_s,
                      "forward_backward": now.get("training_step", 0.0) - now.get("prepare", 0.0),
                      "optimizer": now.get("optimizer", 0.0)}
            phases["other"] = step_s - sum(phases.values())
            self.rows.append({"step": state.global_step, "step_s": step_s, "phases_s": phases,
                              "completion_tokens": now.get("tokens", 0), "verification_s": verify_s,
                              "profiled": bool(now.get("profiling")),
                              "compiled_graphs": compiled_graphs()})
            if state.global_step == 1:
                self.graphs_after_step_1 = compiled_graphs()

    return StepClock()


# ------------------------------------------------------------------------------------------------ one path
def path_config(args, model_dir: Path, run_dir: Path, path: str):
    from tritonrl.config import load_config

    cpu = args.cpu_rehearsal
    per_device = min(args.micro_batch, args.completions)
    steps = args.eager_steps
    if path == "fast":
        steps = args.fast_steps + (args.cycle if args.profile_from else 0)
    compile_opts = {"backend": args.compile_backend, "mode": args.compile_mode}
    overrides = [
        f"model.name_or_path={model_dir}", f"model.dtype={'float32' if cpu else 'bfloat16'}",
        "model.gradient_checkpointing=true", f"data.tasks=[{args.tasks}]", "data.levels=[1,2]",
        "data.source=bundled", f"run.run_dir={run_dir}", "run.report_to=none", "run.save_steps=1000",
        f"rl.steps={steps}", "rl.num_generations=8", f"rl.per_device_batch_size={per_device}",
        f"rl.gradient_accumulation_steps={args.completions // per_device}",
        f"rl.max_completion_length={args.tokens}", "rl.curriculum=false", "rl.learning_rate=1e-5",
        f"rl.use_cpu={str(cpu).lower()}", f"rl.bf16={str(not cpu).lower()}",
        f"rl.generation={path}", f"rl.generation_chunks={args.chunks if path == 'fast' else 1}",
        "rl.generation_compile=" + json.dumps(compile_opts),
        "rl.trl=" + json.dumps({"generation_kwargs": {"min_new_tokens": args.tokens}, "save_strategy": "no",
                                **({"steps_per_generation": args.steps_per_generation}
                                   if path == "fast" and args.steps_per_generation else {})}),
        f"verify.device={'cpu' if cpu else 'cuda'}",
        f"rl.generation_merge_lora={str(args.merge_lora and path == 'fast').lower()}",
        f"rl.reward_beside_training={str(args.reward_beside_training and path == 'fast').lower()}",
        f"rl.generation_switch_interval_ms={'null' if args.switch_interval_ms == 'none' else args.switch_interval_ms}",
    ]
    if not cpu:
        overrides.append(f"verify.workers_per_gpu={args.verify_workers}")
        if args.no_timing:
            overrides.append("verify.timing=false")
        if args.warm_children:
            overrides.append("verify.warm_children=true")
        if args.warm_spares:
            overrides.append("verify.warm_spares=true")
    if cpu:
        overrides += ["verify.workers=2", "verify.multi_input=false", "verify.timing=false", "run.torch_threads=1"]
    return load_config(None, overrides)


def run_path(args, model_dir: Path, path: str) -> dict:
    """``path`` (fast or eager) for its steps; its figures."""
    import torch

    from tritonrl.common.llm import load_model
    from tritonrl.train import grpo, rl
    from tritonrl.train.data import load_training_tasks, rl_rows, to_dataset
    from tritonrl.train.fast_generation import compiled_graphs
    from tritonrl.train.stage_session import StageSession

    cuda = not args.cpu_rehearsal
    run_dir = Path(tempfile.mkdtemp(prefix=f"rl-step-{path}-"))
    config = path_config(args, model_dir, run_dir, path)
    tasks = load_training_tasks(config.data)
    rows = rl_rows(tasks, config.data.prompt_template)
    prompts = args.completions * (args.cycle if path == "fast" else 1) // config.rl.num_generations
    rows = rows * -(-prompts // len(rows))  # a generation's distinct prompts (TRL's sampler needs that many rows)
    reward = candidate_reward(tasks, CPU_KINDS if args.cpu_rehearsal else KINDS, config.verify)
    session = StageSession(config, "grpo")
    trainer_args = grpo.trainer_args(config, session, curriculum_on=False)
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    graphs_before = compiled_graphs()
    started = time.perf_counter()
    with session:
        model, tokenizer = load_model(config.model, str(model_dir))
        trainer = rl.build_trainer(config, grpo.trainer_class(), trainer_args, model, tokenizer, to_dataset(rows),
                                   rows, reward, {}, [], compile_anywhere=args.cpu_rehearsal)
        clock = make_clock(trainer, reward, cuda, args.profile_from if path == "fast" else None)
        trainer.add_callback(clock)
        try:
            trainer.train()
        finally:
            if reward.background is not None:
                reward.background.close()
            reward.close()
    result = summarize(path, clock, trainer, reward, graphs_before, time.perf_counter() - started, rows, tokenizer,
                       cycle=args.cycle if path == "fast" else 1)
    result["peak_memory_gib"] = round(torch.cuda.max_memory_allocated() / 2**30, 2) if cuda else None
    del trainer, model
    gc.collect()
    if cuda:  # the next path's peak memory must not hold this one's compiled graphs and CUDA-graph pool
        from torch._inductor.cudagraph_trees import reset_cudagraph_trees

        torch._dynamo.reset()
        reset_cudagraph_trees()
        torch.cuda.empty_cache()
    return result


def _compile_summary(trainer) -> dict | None:
    """The decode step's compile settings as torch.compile got them (the guard filter by name)."""
    compile_config = getattr(getattr(trainer, "generation_config", None), "compile_config", None)
    if compile_config is None or getattr(trainer.generation_config, "disable_compile", True):
        return None
    options = dict(compile_config.options or {})
    if "guard_filter_fn" in options:
        options["guard_filter_fn"] = getattr(options["guard_filter_fn"], "__name__", str(options["guard_filter_fn"]))
    return {"backend": str(compile_config.backend), "mode": compile_config.mode, "options": options}


def summarize(path: str, clock, trainer, reward, graphs_before: int, wall_s: float, rows, tokenizer,
              cycle: int = 1) -> dict:
    from tritonrl.train.fast_generation import base_model, longest_prompt_tokens

    # the first generation's steps hold the compile (fast) and warm-ups; a generation serves ``cycle`` steps
    measured = [r for r in clock.rows[cycle:] if not r["profiled"]] or clock.rows
    n = len(measured)
    gen_s = sum(r["phases_s"]["generation"] for r in measured)
    tokens = sum(r["completion_tokens"] for r in measured)
    verify_s = sum(r["verification_s"] for r in measured)
    wait_s = sum(r["phases_s"]["reward_wait"] for r in measured)
    plan = getattr(trainer, "generation_plan", None)
    last = clock.rows[-1]["compiled_graphs"] if clock.rows else graphs_before
    return {
        "path": path,
        "generation": plan.mode if plan else None, "generation_fallback": plan.fallback if plan else None,
        "generation_chunks": trainer.reward_overlap[0] if getattr(trainer, "reward_overlap", None) else 1,
        "max_cache_len": plan.max_cache_len if plan else None,
        "attention": getattr(base_model(trainer.model).config, "_attn_implementation", None),
        "decode_compile": _compile_summary(trainer),
        "merged_lora": bool(getattr(base_model(trainer.model), "_tritonrl_merged_generate", False)),
        "longest_prompt_tokens": longest_prompt_tokens(tokenizer, [row["prompt"] for row in rows]),
        "steps": len(clock.rows), "measured_steps": n,
        "generation_tokens_per_s": round(tokens / gen_s, 1) if gen_s else None,
        "step_s": round(sum(r["step_s"] for r in measured) / n, 3) if n else None,
        "first_step_s": round(clock.rows[0]["step_s"], 3) if clock.rows else None,
        "phases_s": {k: round(sum(r["phases_s"][k] for r in measured) / n, 3)
                     for k in ("generation", "reward_wait", "forward_backward", "optimizer", "other")} if n else None,
        "verification_s": round(verify_s / n, 3) if n else None,
        "reward_hidden_fraction": round(max(0.0, 1 - wait_s / verify_s), 3) if verify_s else None,
        "recompiles_after_step_1": (last - clock.graphs_after_step_1) if clock.graphs_after_step_1 is not None
        else None,
        "compiled_graphs": last - graphs_before,
        "dynamo": dynamo_counters(),
        "candidates_by_kind": dict(reward.kinds_seen),
        "correct_rate": [round(s.correct_rate, 3) for s in reward.history],
        "wall_s": round(wall_s, 1),
        "rows": [{**r, "step_s": round(r["step_s"], 3), "verification_s": round(r["verification_s"], 3),
                  "phases_s": {k: round(v, 3) for k, v in r["phases_s"].items()}} for r in clock.rows],
        **({"profile": dict(clock.profile)} if clock.profile else {}),
    }


def dynamo_counters() -> dict:
    """What torch.compile did in this process so far: graph breaks (by reason) and CUDA-graph counters."""
    from torch._dynamo.utils import counters

    return {"graph_breaks": {str(k)[:200]: v for k, v in counters["graph_break"].items()},
            "inductor_cudagraph": {k: v for k, v in counters["inductor"].items() if "cudagraph" in k},
            "unique_graphs": int(counters["stats"]["unique_graphs"])}


# ------------------------------------------------------------------------------------------------ the run
def build(args) -> tuple[Path, dict]:
    from tritonrl.common.llm import build_tiny_model

    model_dir = Path(args.model_dir or tempfile.mkdtemp(prefix="rl-step-model-"))
    if args.cpu_rehearsal:
        build_tiny_model(model_dir)
        return model_dir, {"size": "tiny"}
    from rehearsal_multi_gpu import build_model

    return model_dir, build_model("1.5b", model_dir)


def device_name(cpu: bool) -> str:
    import torch

    if not cpu and torch.cuda.is_available():
        return torch.cuda.get_device_name(0)
    return f"cpu ({platform.processor() or platform.machine()}, {os.cpu_count()} cores)"


def done_when(fast: dict, eager: dict | None, cpu: bool) -> dict | None:
    """Issue 52's targets, checked (None on a CPU: they are GPU targets)."""
    if cpu:
        return None
    ratio = (fast["generation_tokens_per_s"] / eager["generation_tokens_per_s"]
             if eager and eager.get("generation_tokens_per_s") and fast.get("generation_tokens_per_s") else None)
    return {"generation_tokens_per_s_at_least_5000": (fast["generation_tokens_per_s"] or 0) >= 5000,
            "no_recompiles_after_step_1": fast["recompiles_after_step_1"] == 0,
            "at_least_5x_eager": ratio is not None and ratio >= 5,
            "reward_hidden_fraction_at_least_0.8": (fast["reward_hidden_fraction"] or 0) >= 0.8}


def headline(out: dict, cpu: bool) -> None:
    """The fast path's figures at the top level, the ratio to the eager path and the targets, once known."""
    fast, eager = out.get("fast"), out.get("eager")
    eager = eager if eager and "error" not in eager else None
    if not fast or "error" in fast:
        return
    for key in ("generation_tokens_per_s", "step_s", "phases_s", "verification_s", "reward_hidden_fraction",
                "recompiles_after_step_1", "peak_memory_gib"):
        out[key] = fast[key]
    if eager and eager["generation_tokens_per_s"] and fast["generation_tokens_per_s"]:
        out["fast_over_eager"] = round(fast["generation_tokens_per_s"] / eager["generation_tokens_per_s"], 2)
    out["done_when"] = done_when(fast, eager, cpu)


def write(args, out: dict) -> None:
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=1) + "\n")


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    if args.cpu_rehearsal:
        os.environ.setdefault("TRITON_INTERPRET", "1")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    model_dir, model = build(args)
    import torch

    from tritonrl.common.llm import load_model
    from tritonrl.config import ModelConfig
    from tritonrl.util.gitinfo import commit

    parameters = model.get("parameters") or sum(
        p.numel() for p in load_model(ModelConfig(name_or_path=str(model_dir)))[0].parameters())
    out: dict = {"benchmark": "rl_step", "date": datetime.date.today().isoformat(), "commit": commit(short=True),
                 "command": " ".join([sys.executable.split("/")[-1], *sys.argv]),
                 "device": device_name(args.cpu_rehearsal), "torch": torch.__version__,
                 "cpu_rehearsal": args.cpu_rehearsal, "model": model.get("size"), "model_parameters": parameters,
                 "completions_per_step": args.completions, "completion_tokens": args.tokens, "forced_length": True,
                 "micro_batch": args.micro_batch, "tasks": args.tasks.split(","), "chunks": args.chunks,
                 "steps_per_generation": args.steps_per_generation, "optimizer_steps_per_generation": args.cycle,
                 "verify_workers_per_gpu": None if args.cpu_rehearsal else args.verify_workers,
                 "verify_timing": not (args.cpu_rehearsal or args.no_timing),
                 "verify_warm_children": bool(args.warm_children and not args.cpu_rehearsal),
                 "verify_warm_spares": bool(args.warm_spares and not args.cpu_rehearsal),
                 "reward_beside_training": args.reward_beside_training,
                 "generation_switch_interval_ms": None if args.switch_interval_ms == "none" else float(
                     args.switch_interval_ms),
                 "compile": {"backend": args.compile_backend, "mode": args.compile_mode}}
    if args.cpu_rehearsal:
        out["note"] = ("CPU rehearsal: wall-clock seconds of the tiny model on a shared CPU, the verifier on "
                       "Triton's interpreter with timing off; a check of the code path, not a GPU figure")
    for path in [p.strip() for p in args.paths.split(",") if p.strip()]:
        print(f"rl_step: {path} path ...", file=sys.stderr, flush=True)
        try:
            out[path] = run_path(args, model_dir, path)
        except Exception as exc:  # noqa: BLE001 - one device call runs both paths: a failing one must not cost the other
            import traceback

            traceback.print_exc()
            out[path] = {"path": path, "error": f"{type(exc).__name__}: {exc}"[:2000]}
        headline(out, args.cpu_rehearsal)
        write(args, out)
    print(json.dumps({k: out.get(k) for k in ("device", "generation_tokens_per_s", "step_s", "phases_s",
                                               "reward_hidden_fraction", "recompiles_after_step_1",
                                               "fast_over_eager", "done_when")}, indent=1))
    return out


if __name__ == "__main__":
    main()
