"""Does RL through our verifier make a model better? The demonstration recipe, one command, resumable in chunks.

    python benchmarks/learning_demo.py --config configs/demo.yaml --budget-s 540       # repeat until it exits 0
    python benchmarks/learning_demo.py --config configs/demo.yaml --summarize-only     # the JSON from a finished run

Steps (each skipped when already done, so a killed or budget-stopped command is simply run again):
1. data: generated tasks (``tritonrl.tasks.generate``) into the dirs the config names: ``data.source`` (the RL
   train split), ``data.sft_sources[0]`` (the first ``--sft-n`` of those, by name: SFT sees part of the train
   split) and ``eval.tasks`` (the held-out split: op combinations never seen in training).
2. model: a Qwen2-architecture causal LM built here from scratch at ``model.name_or_path`` (no hub weights;
   tokenizer trained on the bundled code, ``tritonrl.train.models.build_tiny_tokenizer``).
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
def build_demo_model(out_dir: str | Path, hidden: int, layers: int, heads: int, kv_heads: int, seed: int = 0) -> Path:
    """A Qwen2 (Qwen2.5-Coder's architecture) causal LM with random weights and the local tokenizer."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    from tritonrl.train.models import build_tiny_tokenizer

    out = Path(out_dir)
    if (out / "demo_model.json").exists():
        return out
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
                                                     "kv_heads": kv_heads, "params": params, "seed": seed}) + "\n")
    return out


# ---------------------------------------------------------------- data
def prepare_data(config, args) -> None:
    from tritonrl.tasks.generate import default_verify_config, generate_tasks

    verify = dataclasses.replace(default_verify_config(), device=config.verify.device, workers=config.verify.workers,
                                 workers_per_gpu=config.verify.workers_per_gpu)
    common = {"kernelbench_dir": args.kernelbench, "shape_scale": args.shape_scale, "verify_config": verify}
    train, sft, heldout = Path(config.data.source), Path(config.data.sft_sources[0]), Path(config.eval.tasks)
    if not (train / "generation_report.json").exists():
        _log(generate_tasks(args.train_n, args.seed, "train", train, **common).table())
    if not (heldout / "generation_report.json").exists():
        _log(generate_tasks(args.heldout_n, args.seed + 1, "heldout", heldout, **common).table())
    if not (sft / "tasks.jsonl").exists():
        subset(train, sft, args.sft_n)


def subset(src: Path, dst: Path, n: int) -> None:
    """The first ``n`` tasks of ``src`` (by name), with their references, in the same layout."""
    rows = [json.loads(line) for line in (src / "tasks.jsonl").read_text().splitlines()][:n]
    (dst / "solutions").mkdir(parents=True, exist_ok=True)
    for row in rows:
        (dst / f"level{row['level']}").mkdir(exist_ok=True)
        shutil.copy(src / f"level{row['level']}" / f"{row['name']}.py", dst / f"level{row['level']}")
        shutil.copy(src / "solutions" / f"{row['name']}.py", dst / "solutions")
    (dst / "tasks.jsonl").write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))


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


def run_stages(config, budget: Budget, eval_reserve_s: float, control: bool) -> bool:
    """Run every unfinished unit; False when the budget ran out first (run the command again)."""
    from tritonrl.pipeline import StageNotFinished, run_pipeline

    units = [("data", ["data"], []), ("sft", ["sft"], []), ("rl", ["rl"], [])]
    units += [(f"eval_{m}", ["eval"], [m]) for m in config.pipeline.eval_models]
    if control:
        units = [("rl", ["rl"], []), ("eval_rl", ["eval"], ["rl"])]
    for name, stages, models in units:
        if _done(config, name):
            continue
        if name.startswith("eval") and budget.left() < eval_reserve_s:
            _log(f"{budget.left():.0f} s left, less than --eval-reserve-s: stopping before {name}")
            return False
        pipeline = dataclasses.replace(config.pipeline, stages=stages, eval_models=models or ["base"])
        try:
            run_pipeline(dataclasses.replace(config, pipeline=pipeline), log=_log)
        except StageNotFinished as exc:
            _log(str(exc))
            return False
    return True


def _done(config, unit: str) -> bool:
    from tritonrl.train.manifest import RunManifest

    stage = config.rl.algo.replace("-", "_") if unit == "rl" else unit
    entry = RunManifest(config.run.run_dir).stage(stage)
    return bool(entry and entry.get("status") == "done")


def control_config(config):
    """Same recipe from the same SFT model, rewards shuffled within each batch, in ``<run_dir>/control``."""
    from tritonrl.train.manifest import RunManifest

    run_dir = Path(config.run.run_dir) / "control"
    manifest = RunManifest(run_dir)
    if (manifest.stage("sft") or {}).get("status") != "done":
        sft = RunManifest(config.run.run_dir).stage("sft")
        manifest.start("sft")
        manifest.record("sft", **{k: sft["outputs"][k] for k in ("model", "tokenizer", "base_model")})
        manifest.finish("sft", "done")
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


def paired_bootstrap(a: dict, b: dict, resamples: int = 10000, seed: int = 0) -> dict[str, float]:
    """Mean over held-out tasks of (rate in ``a`` - rate in ``b``), with a percentile 95% interval from
    resampling tasks (both models' samples of a task move together: the pairing)."""
    tasks = sorted(set(a) & set(b))
    diffs = [a[t][0] / a[t][1] - b[t][0] / b[t][1] for t in tasks]
    rng = random.Random(seed)
    means = sorted(sum(rng.choice(diffs) for _ in diffs) / len(diffs) for _ in range(resamples))
    return {"mean": sum(diffs) / len(diffs), "ci95_low": means[int(0.025 * resamples)],
            "ci95_high": means[int(0.975 * resamples) - 1], "tasks": len(tasks), "resamples": resamples}


def summarize(run_dir: str | Path, device: str | None = None) -> dict:
    """``learning_demo.json``'s content from a finished run directory (missing models are left out)."""
    run_dir = Path(run_dir)
    paths = {"base": run_dir / "eval/base", "sft": run_dir / "eval/sft", "rl": run_dir / "eval/rl",
             "control": run_dir / "control/eval/rl"}
    tasks, summary = {}, {}
    for name, path in paths.items():
        if not (path / "results.jsonl").exists():
            continue
        tasks[name] = per_task(path / "results.jsonl")
        correct = sum(c for c, _ in tasks[name].values())
        n = sum(n for _, n in tasks[name].values())
        low, high = wilson(correct, n)
        report = json.loads((path / "report.json").read_text()) if (path / "report.json").exists() else {}
        summary[name] = {"correct_rate": correct / n if n else 0.0, "ci95_low": low, "ci95_high": high,
                         "correct": correct, "samples": n, "pass_at_k": report.get("pass_at_k", {})}
    if not summary:
        raise SystemExit(f"no evaluation results under {run_dir}")
    first = next(iter(tasks.values()))
    out = {"device": device or _device(), "date": datetime.date.today().isoformat(), "run_dir": str(run_dir),
           "heldout_tasks": len(first), "samples_per_task": min(n for _, n in first.values()), **summary}
    for name in ("rl", "control"):
        if name in tasks and "sft" in tasks:
            out[f"{name}_minus_sft"] = paired_bootstrap(tasks[name], tasks["sft"])
    return out


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
    parser.add_argument("--sft-n", type=int, default=64, help="of which SFT sees the first N")
    parser.add_argument("--heldout-n", type=int, default=48, help="generated held-out tasks (evaluation)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--shape-scale", type=int, default=1)
    parser.add_argument("--kernelbench", default=None, help="decontaminate against this KernelBench clone")
    parser.add_argument("--hidden", type=int, default=512)
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--kv-heads", type=int, default=4)
    parser.add_argument("--no-control", action="store_true", help="skip the shuffled-reward control")
    parser.add_argument("--summarize-only", action="store_true")
    parser.add_argument("--out", default=None, help="also write the summary JSON here")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    from tritonrl.config import PipelineConfig, load_config

    args = parse_args(argv)
    config = load_config(args.config, args.set, schema=PipelineConfig)
    run_dir = Path(config.run.run_dir)
    if not args.summarize_only:
        budget = Budget(args.budget_s)
        prepare_data(config, args)
        build_demo_model(config.model.name_or_path, args.hidden, args.layers, args.heads, args.kv_heads, config.run.seed)
        if not run_stages(config, budget, args.eval_reserve_s, control=False):
            return EXIT_RESUME
        if not args.no_control and not run_stages(control_config(config), budget, args.eval_reserve_s, control=True):
            return EXIT_RESUME
    summary = summarize(run_dir)
    text = json.dumps(summary, indent=1) + "\n"
    (run_dir / "learning_demo.json").write_text(text)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text)
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
