"""Does GRPO raise its own training reward? A direction check on a fixed set of train tasks, no held-out involved.

    TRITON_INTERPRET=1 python benchmarks/studies/grpo_direction.py --config configs/demo_cpu.yaml --out /tmp/dir/lr3e-5 \
        --tasks-n 16 --steps 40 --k 8 --set rl.learning_rate=3.0e-5 --set rl.num_generations=8

1. ``--tasks-n`` tasks of the train split (``data.source``), taken round-robin over the families
   (``learning_demo.stratified``), copied to ``<out>/../tasks_<n>`` (shared by every setting with the same n).
2. The SFT model of ``--from-run`` (its manifest's ``sft`` entry) evaluated on them: ``--k`` samples a task at
   ``eval.temperature`` (``tritonrl.evaluation.evaluate``, the verifier and reward code training uses), in
   ``<out>/../before_<n>_k<k>`` (shared, evaluated once).
3. GRPO from that SFT model on those tasks only (``rl.curriculum`` off: uniform), ``--steps`` steps, in
   ``<out>/run``; the config's ``rl.*`` and any ``--set`` apply.
4. The trained model evaluated the same way (``<out>/after``); ``<out>/direction.json``: correct@1 and the mean
   staged reward before and after, and the training rollouts' correct rate and reward by thirds of the run.

``--eval-split validation`` measures before and after on the validation split instead (whole op combinations
never trained on): does what GRPO learns on the train tasks transfer? Pair it with a large ``--tasks-n`` (all of
the train split: 1600), as the demonstration trains.

``--greedy`` instead evaluates the SFT model on the validation split at temperature 0 (k=1) beside its recorded
temperature-1.0 figure: is there room for RL to sharpen the distribution? (The validation split, not held-out:
held-out is evaluated only by the demonstration itself.)
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from learning_demo import bootstrap, per_task, read_rows, stratified, subset, validation_dir  # noqa: E402


def task_subset(config, n: int, root: Path) -> Path:
    """``n`` train tasks, round-robin over the families, in ``root/tasks_<n>`` (made once)."""
    out = root / f"tasks_{n}"
    if not (out / "tasks.jsonl").exists():
        train = Path(config.data.source)
        subset(train, out, [r["name"] for r in stratified(read_rows(train), n)])
    return out


def staged_mean(results_jsonl: Path) -> float:
    """The mean staged-preset reward of an evaluation's samples (the same ``compute_reward`` training uses)."""
    from tritonrl.common.reward import compute_reward
    from tritonrl.config import RewardConfig
    from tritonrl.verify.shared.verdict import VerifyResult

    staged = RewardConfig(preset="staged")
    rows = [json.loads(line) for line in results_jsonl.read_text().splitlines() if line.strip()]
    return sum(compute_reward(VerifyResult.from_dict(r["result"]), staged) for r in rows) / len(rows)


def evaluate_on(config, spec: str, tasks_dir: Path, k: int, out: Path, temperature: float | None = None) -> dict:
    from tritonrl.evaluation.evaluate import evaluate
    from tritonrl.tasks import load_tasks

    gen = config.eval if temperature is None else dataclasses.replace(config.eval, temperature=temperature)
    if not (out / "DONE").exists():
        evaluate(spec, load_tasks(str(tasks_dir)), k, gen, config.verify, out,
                 meta={"stage": spec, "split": tasks_dir.name}, resume=True)
        (out / "DONE").write_text("")
    rate = bootstrap(per_task(out / "results.jsonl"), resamples=2000)
    return {**rate, "staged_reward": staged_mean(out / "results.jsonl"), "k": k, "temperature": gen.temperature}


def copy_sft_entry(source_run: Path, run_dir: Path) -> None:
    """``run_dir``'s manifest names ``source_run``'s SFT model (as the demonstration's control does)."""
    from tritonrl.common.manifest import RunManifest

    manifest = RunManifest(run_dir)
    if (manifest.stage("sft") or {}).get("status") == "done":
        return
    sft = RunManifest(source_run).stage("sft")
    manifest.start("sft")
    manifest.record("sft", **{key: sft["outputs"][key] for key in ("model", "tokenizer", "base_model")})
    manifest.finish("sft", "done")


def by_thirds(stage_dir: Path) -> dict:
    """The training rollouts' correct rate and reward (mean per step) in each third of the run."""
    steps = json.loads((stage_dir / "signal_health.json").read_text()).get("steps") or []
    thirds = [steps[i * len(steps) // 3:(i + 1) * len(steps) // 3] for i in range(3)]

    def mean(rows, key):
        values = [r[key] for r in rows if r.get(key) is not None]
        return round(sum(values) / len(values), 4) if values else None

    return {"correct_rate": [mean(t, "correct_rate") for t in thirds], "reward": [mean(t, "reward") for t in thirds],
            "zero_variance_groups": [mean(t, "true_zero_std_groups") for t in thirds]}


def run_grpo(config, tasks_dir: Path, run_dir: Path, steps: int, source_run: Path) -> None:
    from tritonrl.train.rl import run_rl
    from tritonrl.train.stage_session import use_torch_threads

    copy_sft_entry(source_run, run_dir)
    rl = dataclasses.replace(config.rl, steps=steps, init_from="sft", curriculum=False, stop_without_signal=0)
    data = dataclasses.replace(config.data, source=str(tasks_dir))
    run = dataclasses.replace(config.run, run_dir=str(run_dir), save_steps=10**6)
    use_torch_threads(run)
    run_rl(dataclasses.replace(config, rl=rl, data=data, run=run))


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", required=True)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="config override")
    parser.add_argument("--out", required=True, help="this setting's directory (its parent holds shared tasks)")
    parser.add_argument("--from-run", default=None, help="the run whose SFT model starts GRPO (default: run.run_dir)")
    parser.add_argument("--tasks-n", type=int, default=16, help="train tasks, round-robin over the families")
    parser.add_argument("--steps", type=int, default=40, help="GRPO steps")
    parser.add_argument("--k", type=int, default=8, help="samples per task before and after")
    parser.add_argument("--eval-split", choices=("train", "validation"), default="train",
                        help="measure before and after on the GRPO tasks (train) or on the validation split")
    parser.add_argument("--greedy", action="store_true",
                        help="only: the SFT model on the validation split at temperature 0 (k=1) and 1.0")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    from tritonrl.config import PipelineConfig, load_config

    args = parse_args(argv)
    config = load_config(args.config, args.set, schema=PipelineConfig)
    source = Path(args.from_run or config.run.run_dir)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    sft_spec = f"{source}:sft"
    if args.greedy:
        validation = validation_dir(config)
        report = {"split": str(validation),
                  "greedy": evaluate_on(config, sft_spec, validation, 1, out / "greedy", temperature=0.0),
                  "sampled": evaluate_on(config, sft_spec, validation, args.k, out / f"sampled_k{args.k}")}
    else:
        tasks = task_subset(config, args.tasks_n, out.parent)
        on_train = args.eval_split == "train"
        measured, tag = (tasks, f"{args.tasks_n}") if on_train else (validation_dir(config), "validation")
        before = evaluate_on(config, sft_spec, measured, args.k, out.parent / f"before_{tag}_k{args.k}")
        run_grpo(config, tasks, out / "run", args.steps, source)
        after = evaluate_on(config, f"{out / 'run'}:grpo", measured, args.k, out / "after")
        report = {"tasks": str(tasks), "measured_on": str(measured), "steps": args.steps, "overrides": args.set,
                  "before": before, "after": after,
                  "delta_correct_at_1": after["correct_at_1"] - before["correct_at_1"],
                  "training": by_thirds(out / "run" / "grpo")}
    (out / "direction.json").write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
