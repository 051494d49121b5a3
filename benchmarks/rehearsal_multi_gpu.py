"""A real-size training rehearsal on several GPUs: LoRA SFT then GRPO under DDP or FSDP, killed and resumed.

    PYTHONPATH=src python benchmarks/rehearsal_multi_gpu.py --strategy ddp --nproc 4 --run-dir /tmp/reh \
        --out $OUT/rehearsal_multi_gpu.json                                  # GPU host, one strategy a command
    PYTHONPATH=src python benchmarks/rehearsal_multi_gpu.py --size tiny --cpu --nproc 2 --run-dir /tmp/reh \
        --out /tmp/reh.json                                                  # CPU: 2 gloo ranks, the tiny model

The model has Qwen2.5-Coder-1.5B's architecture and size (``--size 1.5b``: hidden 1536, 28 layers, 12 heads, 2
KV heads, intermediate 8960, vocabulary 151936, tied embeddings) with random weights in bfloat16, built here (no
download) with the project's small local tokenizer (its ids fit the large vocabulary); ``--size tiny`` is the
tests' 2-layer model. Each stage is the project's own command through ``accelerate launch --config_file
configs/accelerate/<strategy>.yaml`` on ``configs/grpo_7b.yaml`` with the sizes cut down (``--set``): SFT
(``tritonrl sft``) then GRPO (``tritonrl rl --algo grpo``). Once a stage's first checkpoint is complete, rank 1
(else rank 0) gets SIGTERM, as a pre-emption would hit one process; the stage must stop as ``interrupted`` on
every rank and ``--resume`` must finish it. Then ``final/`` is loaded back with transformers and ``tritonrl
eval`` samples and judges a few bundled tasks with it.

Recorded into ``--out`` after every part (under ``runs.<strategy>``, with the machine, date and commit): each
launch's seconds, exit code and peak memory per GPU (``nvidia-smi`` sampled every 0.5 s, the whole GPU: training
plus its verifier); the stage's status; from GRPO's log: TRL's ``step_time``, the reward's ``verify/time_s`` per step and completion tokens per
step, and generation tokens/s as completion tokens over (step time - verification time), a lower bound (the step
also holds the forward and backward passes). ``--parts`` runs some parts only (a command each on a device).
On a CPU, ``--cpu``: accelerate's ``--cpu`` with several processes needs mpirun, so the ranks are started as on
GPUs (torchrun, ``ACCELERATE_USE_CPU=true``) and train with ``use_cpu`` (gloo).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SIZES = {  # Qwen2.5-Coder-1.5B's config.json (architecture only)
    "1.5b": dict(hidden_size=1536, num_hidden_layers=28, num_attention_heads=12, num_key_value_heads=2,
                 intermediate_size=8960, vocab_size=151936, max_position_embeddings=32768, rope_theta=1e6,
                 tie_word_embeddings=True, rms_norm_eps=1e-6),
}
EVAL_TASKS = "l1_relu,l1_gelu,l2_gemm_bias_relu"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", default="1.5b", choices=["1.5b", "tiny"])
    p.add_argument("--strategy", default="ddp", choices=["ddp", "fsdp", "zero3"])
    p.add_argument("--nproc", type=int, default=4)
    p.add_argument("--cpu", action="store_true", help="gloo ranks on the CPU (the tiny model, tests)")
    p.add_argument("--run-dir", required=True, help="where the model and the run live (reused by later parts)")
    p.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "rehearsal_multi_gpu.json"))
    p.add_argument("--parts", default="build,sft,rl,eval")
    p.add_argument("--sft-steps", type=int, default=8)
    p.add_argument("--rl-steps", type=int, default=6)
    p.add_argument("--completion-tokens", type=int, default=256)
    p.add_argument("--no-kill", action="store_true", help="no SIGTERM mid-stage")
    p.add_argument("--stage-timeout-s", type=float, default=540.0)
    p.add_argument("--commit", help="this repository's commit, recorded (the device's copy has no .git)")
    return p.parse_args(argv)


# ------------------------------------------------------------------------------------------------ the model
def build_model(size: str, out: Path) -> dict:
    """The rehearsal's model in ``out`` (reused when there): random weights, the local tokenizer."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    from tritonrl.common.llm import build_tiny_model, build_tiny_tokenizer

    if size == "tiny":
        build_tiny_model(out)
        return {"size": "tiny", "path": str(out)}
    marker = out / "rehearsal.json"
    if marker.exists():
        return json.loads(marker.read_text())
    tokenizer = build_tiny_tokenizer()
    config = Qwen2Config(**SIZES[size], eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
                         bos_token_id=None, dtype="bfloat16")
    torch.manual_seed(0)
    torch.set_default_dtype(torch.bfloat16)
    model = Qwen2ForCausalLM(config)
    torch.set_default_dtype(torch.float32)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    info = {"size": size, "path": str(out), "parameters": sum(p.numel() for p in model.parameters()),
            "config": SIZES[size]}
    marker.write_text(json.dumps(info) + "\n")
    return info


# ------------------------------------------------------------------------------------------------ launching
def stage_overrides(args, model_dir: Path, stage: str) -> list[str]:
    """``--set`` values that cut configs/grpo_7b.yaml down to a rehearsal (and onto the CPU with ``--cpu``)."""
    common = [f"model.name_or_path={model_dir}", "data.sft_sources=[bundled]", "data.max_tasks=8",
              "run.save_steps=2", "run.save_total_limit=1", "run.report_to=none", "run.preemption_watch=false"]
    if args.cpu:
        common += ["model.dtype=float32", "model.gradient_checkpointing=false", "model.attn_implementation=eager",
                   "sft.use_cpu=true", "rl.use_cpu=true", "sft.bf16=false", "rl.bf16=false", "verify.device=cpu",
                   "verify.workers=1", "verify.multi_input=false", "verify.timing=false"]
    if stage == "sft":
        return common + [f"sft.max_steps={args.sft_steps}", "sft.max_length=1024", "sft.per_device_batch_size=1",
                         "sft.gradient_accumulation_steps=1"]
    return common + [f"rl.steps={args.rl_steps}", "rl.num_generations=4", "rl.per_device_batch_size=4",
                     "rl.gradient_accumulation_steps=1", f"rl.max_completion_length={args.completion_tokens}",
                     "curriculum.window=16", "curriculum.ramp_updates=2"]


def launch_command(args, stage: str, model_dir: Path, resume: bool) -> list[str]:
    sub = ["sft"] if stage == "sft" else ["rl", "--algo", "grpo"]
    cmd = [sys.executable, "-m", "accelerate.commands.launch", "--config_file",
           str(ROOT / "configs" / "accelerate" / f"{args.strategy}.yaml"), "--num_processes", str(args.nproc)]
    if args.cpu:
        cmd += ["--mixed_precision", "no"]
    cmd += ["-m", "tritonrl", *sub, "--config", str(ROOT / "configs" / "grpo_7b.yaml"), "--run-dir",
            str(Path(args.run_dir) / "run")]
    for value in stage_overrides(args, model_dir, stage):
        cmd += ["--set", value]
    return cmd + (["--resume"] if resume else [])


def environment(args) -> dict:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", "PYTHONUNBUFFERED": "1",
           "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    if args.cpu:
        env.update(ACCELERATE_USE_CPU="true", OMP_NUM_THREADS="1", TRITON_INTERPRET="1")
    return env


class GpuMemory:
    """Peak ``memory.used`` (MiB) of every GPU while the block runs (``nvidia-smi`` every 0.5 s); none on a CPU."""

    def __init__(self) -> None:
        self.peak_mib: dict[str, int] = {}
        self._proc = None

    def __enter__(self) -> GpuMemory:
        try:
            self._proc = subprocess.Popen(["nvidia-smi", "--query-gpu=index,memory.used", "--format=csv,noheader,"
                                           "nounits", "-lms", "500"], stdout=subprocess.PIPE,
                                          stderr=subprocess.DEVNULL, text=True)
        except OSError:
            return self
        threading.Thread(target=self._read, daemon=True).start()
        return self

    def _read(self) -> None:
        for line in self._proc.stdout:
            try:
                index, used = (int(x) for x in line.split(","))
            except ValueError:
                continue
            self.peak_mib[str(index)] = max(used, self.peak_mib.get(str(index), 0))

    def __exit__(self, *exc) -> None:
        if self._proc is not None:
            self._proc.terminate()
            self._proc.wait(timeout=10)


def machine() -> str:
    """The GPUs ``nvidia-smi`` lists (``2 x NVIDIA H200``), else the CPU."""
    try:
        names = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                               text=True, timeout=10, check=True).stdout.split("\n")
        names = [n.strip() for n in names if n.strip()]
    except (OSError, subprocess.SubprocessError):
        names = []
    if names:
        return f"{len(names)} x {names[0]}" if len(set(names)) == 1 else ", ".join(names)
    return f"cpu ({os.cpu_count()} cores)"


def commit(given: str | None) -> str | None:
    from tritonrl.util.gitinfo import commit as checkout_commit

    return given or checkout_commit(short=True, root=ROOT)


def worker_pids(launcher: int) -> list[int]:
    """The launcher's children (accelerate runs torchrun's agent in its own process: the ranks)."""
    try:
        return [int(p) for p in Path(f"/proc/{launcher}/task/{launcher}/children").read_text().split()]
    except OSError:
        return []


def run_launch(args, stage: str, model_dir: Path, resume: bool, kill: bool, log: Path) -> dict:
    """One launch; with ``kill``, SIGTERM to one rank once the stage's first checkpoint is complete."""
    checkpoints = Path(args.run_dir) / "run" / ("sft" if stage == "sft" else "grpo") / "checkpoints"
    started, killed = time.monotonic(), None
    with open(log, "a") as fh, GpuMemory() as memory:
        fh.write(f"\n== {stage} resume={resume}\n")
        fh.flush()
        proc = subprocess.Popen(launch_command(args, stage, model_dir, resume), env=environment(args), stdout=fh,
                                stderr=subprocess.STDOUT, cwd=ROOT)
        while proc.poll() is None and time.monotonic() - started < args.stage_timeout_s:
            if kill and killed is None and any(checkpoints.glob("checkpoint-*/COMPLETE")):
                pids = worker_pids(proc.pid)
                if pids:
                    killed = {"pid": pids[-1], "rank": len(pids) - 1, "after_s": round(time.monotonic() - started, 1)}
                    os.kill(pids[-1], signal.SIGTERM)
            time.sleep(0.2)
        if proc.poll() is None:
            proc.kill()
        code = proc.wait()
    return {"resume": resume, "seconds": round(time.monotonic() - started, 1), "exit_code": code,
            "sigterm": killed, "peak_gpu_memory_mib": memory.peak_mib}


# ------------------------------------------------------------------------------------------------ figures
def stage_status(args, stage: str) -> str | None:
    path = Path(args.run_dir) / "run" / "manifest.json"
    if not path.exists():
        return None
    return json.loads(path.read_text())["stages"].get(stage, {}).get("status")


def grpo_figures(args) -> dict:
    """Step time, verification seconds, completion tokens and generation tokens/s per step, from GRPO's log."""
    path = Path(args.run_dir) / "run" / "grpo" / "metrics.json"
    if not path.exists():
        return {}
    rows = [r for r in json.loads(path.read_text())["log_history"] if "step_time" in r]
    per_step = []
    for r in rows:
        tokens = r.get("completions/mean_length", 0.0) * 4 * args.nproc  # per_device_batch_size 4, every rank
        busy = r["step_time"] - r.get("verify/time_s", 0.0)
        per_step.append({"step": r.get("step"), "step_time_s": round(r["step_time"], 2),
                         "verify_s": round(r.get("verify/time_s", 0.0), 2), "completion_tokens": round(tokens),
                         "generation_tokens_per_s_lower_bound": round(tokens / busy, 1) if busy > 0 else None})
    mean = (lambda k: round(sum(s[k] for s in per_step) / len(per_step), 2)) if per_step else (lambda k: None)
    return {"steps": per_step, "mean_step_time_s": mean("step_time_s"), "mean_verify_s": mean("verify_s")}


def load_final(args) -> dict:
    """``grpo/final`` loaded back with transformers: whole weights, finite."""
    import torch
    from transformers import AutoModelForCausalLM

    started = time.monotonic()
    model = AutoModelForCausalLM.from_pretrained(Path(args.run_dir) / "run" / "grpo" / "final")
    finite = all(torch.isfinite(p).all().item() for p in model.parameters())
    return {"loads": True, "finite": finite, "parameters": sum(p.numel() for p in model.parameters()),
            "seconds": round(time.monotonic() - started, 1)}


def evaluate_final(args) -> dict:
    out = Path(args.run_dir) / "eval"
    cmd = [sys.executable, "-m", "tritonrl", "eval", "--model", str(Path(args.run_dir) / "run" / "grpo" / "final"),
           "--tasks", EVAL_TASKS, "--k", "2", "--max-new-tokens", "64", "--out", str(out), "--overwrite",
           "--device", "cpu" if args.cpu else "cuda"]
    started = time.monotonic()
    proc = subprocess.run(cmd, env=environment(args), capture_output=True, text=True, cwd=ROOT, timeout=540)
    report = out / "report.json"
    summary = json.loads(report.read_text()) if report.exists() else None
    return {"exit_code": proc.returncode, "seconds": round(time.monotonic() - started, 1), "tasks": EVAL_TASKS,
            "report_keys": sorted(summary)[:20] if isinstance(summary, dict) else None,
            "tail": proc.stdout[-600:] + proc.stderr[-600:] if proc.returncode else None}


# ------------------------------------------------------------------------------------------------ main
def write(path: str, report: dict) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(f"{path}.tmp").write_text(json.dumps(report, indent=1))
    os.replace(f"{path}.tmp", path)


def run_stage(args, stage: str, model_dir: Path, log: Path) -> dict:
    """The stage launched, killed once mid-run, then resumed until done (the statuses recorded each time)."""
    manifest_stage = "sft" if stage == "sft" else "grpo"
    launches = [run_launch(args, stage, model_dir, resume=False, kill=not args.no_kill, log=log)]
    launches[-1]["status"] = stage_status(args, manifest_stage)
    if launches[-1]["status"] != "done":
        launches.append(run_launch(args, stage, model_dir, resume=True, kill=False, log=log))
        launches[-1]["status"] = stage_status(args, manifest_stage)
    return {"launches": launches, "status": launches[-1]["status"],
            "killed_and_resumed": len(launches) == 2 and launches[0]["sigterm"] is not None
            and launches[0]["status"] == "interrupted" and launches[1]["status"] == "done"}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    run_dir = Path(args.run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    report = json.loads(Path(args.out).read_text()) if Path(args.out).exists() else {"runs": {}}
    entry = report["runs"].setdefault(args.strategy, {})
    entry.update(nproc=args.nproc, size=args.size, device="cpu" if args.cpu else "cuda",
                 date=time.strftime("%Y-%m-%d"), machine=machine(), commit=commit(args.commit))
    model_dir, log = run_dir / "model", run_dir / f"{args.strategy}.log"
    for part in args.parts.split(","):
        if part == "build":
            report["model"] = build_model(args.size, model_dir)
        elif part in ("sft", "rl"):
            entry[part] = run_stage(args, part, model_dir, log)
            if part == "rl":
                entry["grpo_figures"] = grpo_figures(args)
        elif part == "eval":
            entry["final"] = load_final(args)
            entry["eval"] = evaluate_final(args)
        write(args.out, report)
        print(f"{args.strategy} {part}: {json.dumps(entry.get(part) or entry.get('final') or report.get('model'))[:300]}",
              flush=True)
    ok = all(entry.get(s, {}).get("status") == "done" for s in ("sft", "rl") if s in args.parts)
    return 0 if ok and entry.get("eval", {}).get("exit_code", 0) == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
