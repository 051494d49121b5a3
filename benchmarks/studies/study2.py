"""Study two (issue 50): RL beyond SFT where there is room to add, and which RL method, on one GPU.

    # here, on the CPU: the splits (from three generated directories: docs/results.md has the commands), the
    # tokenizer, the length audit, prepare.json; before the main run, the held-out split alone (--prepare-heldout)
    python benchmarks/studies/study2.py --config configs/study2.yaml --prepare
    # on the GPU host, the same command in every call until it prints "phase now: done" (the run goes on in its own
    # process session between calls while the machine is held; each call copies what exists to --out)
    python benchmarks/studies/study2.py --config configs/study2.yaml --phase calibration --slots 4 --wait-s 540 --out $OUT
    # the main run, a hold at a time (--arms: the arms this hold trains); "phase now: hold done" ends a hold; each
    # call's archives are committed in benchmarks/data/study2_main, which the next hold restores from (--carry)
    python benchmarks/studies/study2.py --config configs/study2.yaml --phase main --arms grpo_s0 \
        --carry benchmarks/data/study2_main --slots 4 --wait-s 535 --out $OUT
    # here: docs/results/study2.json and its plot from the recorded per-task counts
    python benchmarks/studies/study2.py --config configs/study2.yaml --phase report

The rules (S*, the futility rule, the edge screen, the equal budget, the criterion) are in ``study2_criterion.py``,
registered before the calibration call. The run is a queue of jobs, each a process of this file (``--phase P --job
NAME``) sharing the GPU (``--slots`` at a time), resumable and marked done in a ``jobs/NAME.json``. The parts:
``study2_prepare`` (the splits), ``study2_jobs`` (the queue, evaluations, digests), ``study2_calibration``,
``study2_main`` and ``study2_report``.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import study2_calibration as calibration  # noqa: E402
import study2_criterion as reg  # noqa: E402
import study2_main as main_run  # noqa: E402
import study2_prepare as prep  # noqa: E402
import study2_report as report  # noqa: E402
from study2_jobs import demo, gpu, paths  # noqa: E402

PHASES = {"calibration": calibration, "main": main_run}
END_PHASES = ("done", "hold done")  # a device call stops waiting at either


# ---------------------------------------------------------------- settings (the registered values are the defaults)
def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--config", required=True)
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="config override")
    p.add_argument("--prepare", action="store_true", help="on the CPU: the splits, tokenizer and audit, then exit")
    p.add_argument("--prepare-heldout", action="store_true",
                   help="on the CPU, before the main run: the held-out split from its regenerated pool, checked")
    p.add_argument("--phase", choices=(*PHASES, "report"), default=None, help="the part of the study to run")
    p.add_argument("--slots", type=int, default=4, help="jobs sharing a GPU at a time")
    p.add_argument("--gpus", type=int, default=1,
                   help="GPUs of the host to use (a two-GPU host: --gpus 2 trains two arms of a hold at once, each on "
                        "a GPU of its own, with the host's twice the cores for their verdicts)")
    p.add_argument("--wait-s", type=float, default=540.0, help="wait this long for the run, then copy and return")
    p.add_argument("--out", default=None, help="copy the results here (a device call's $OUT) before returning; "
                                               "--phase report: where study2.json and the plot go (docs/results)")
    p.add_argument("--job", default=None, help=argparse.SUPPRESS)
    p.add_argument("--foreground", action="store_true", help="run the queue in this process (tests, rehearsal)")
    p.add_argument("--rehearsal", action="store_true",
                   help="a rehearsal (toy sizes): goes on past the futility rule, so every step runs; recorded")
    m = p.add_argument_group("the main run")
    m.add_argument("--arms", default=None, help=f"the arms this hold trains (default: every unfinished one of "
                                                f"{','.join(main_run.ARMS)})")
    m.add_argument("--retrain", default=None, metavar="ARM[,ARM]",
                   help="train these finished arms again in this hold (a new hold only): their training and "
                        "evaluations are kept under abandoned/hold-H and recorded as abandoned, with --why; for an "
                        "arm whose training is void (its reward was found broken), never to pick a better run")
    m.add_argument("--why", default=None, help="with --retrain: why, recorded in holds.json and heldout_runs.jsonl")
    m.add_argument("--carry", default=None, metavar="DIR",
                   help="the archives earlier holds' calls sent back, restored on a fresh machine (default: "
                        "<run>/carry; the study's own are committed in benchmarks/data/study2_main, since a "
                        "workspace is not kept between sessions)")
    m.add_argument("--calibration", default=None, help="the committed calibration result (default: "
                                                       "docs/results/study2_calibration.json)")
    m.add_argument("--screen-enough", action="store_true",
                   help="screen the stream's shards in order only until enough edge prompts are found (the same "
                        "prompts as the whole screen; default: the whole stream, as registered)")
    m.add_argument("--device", default=None, metavar="TEXT",
                   help="--phase report: the machines of holds whose record lacks them (holds before "
                        "the record was kept), written into the result's device")
    m.add_argument("--counts", default=None, help="--phase report: the per-task counts (default: "
                                                  "docs/results/study2_counts.json, made from the run when it is here)")
    g = p.add_argument_group("the study's sizes (defaults: the registered ones; a rehearsal shrinks them)")
    g.add_argument("--validation-n", type=int, default=120, help="validation tasks (whole op combinations)")
    g.add_argument("--calib-edge-n", type=int, default=128, help="calibration prompts for each checkpoint's edge share")
    g.add_argument("--calib-lr-n", type=int, default=1024, help="calibration prompts screened for the rate check")
    g.add_argument("--first-validated", type=int, default=300, help="first SFT step validated")
    g.add_argument("--validation-k", type=int, default=reg.VALIDATION_K)
    g.add_argument("--lr-steps", type=int, default=8, help="GRPO steps of each rate in the rate check")
    g.add_argument("--lr-validation-k", type=int, default=8, help="validation samples a task after the rate check")
    g.add_argument("--screen-shard", type=int, default=1024, help="RL-stream prompts a screen job samples")
    g.add_argument("--unseen-n", type=int, default=None, help="never-seen edge prompts checked after each arm (256)")
    g.add_argument("--steps-cap", type=int, default=None, help="a rehearsal's cap on the RL steps (registered: 60)")
    g.add_argument("--heldout-n", type=int, default=None, help="a rehearsal's held-out tasks (registered: all)")
    g.add_argument("--hidden", type=int, default=512)
    g.add_argument("--layers", type=int, default=8)
    g.add_argument("--heads", type=int, default=8)
    g.add_argument("--kv-heads", type=int, default=4)
    g.add_argument("--vocab", type=int, default=4000)
    g.add_argument("--torch-threads", type=int, default=4, help="torch threads per job process")
    args = p.parse_args(argv)
    if not args.rehearsal and (args.steps_cap is not None or args.unseen_n not in (None, 256) or args.heldout_n):
        p.error("--steps-cap, --unseen-n and --heldout-n change registered sizes: only with --rehearsal")
    if bool(args.retrain) != bool(args.why):
        p.error("--retrain and --why go together: say which arms to train again and why")
    retrain = set(args.retrain.split(",")) if args.retrain else set()
    if retrain - set(main_run.ARMS):
        p.error(f"--retrain: no arm {sorted(retrain - set(main_run.ARMS))}; the arms are {','.join(main_run.ARMS)}")
    if args.arms and retrain - set(args.arms.split(",")):
        p.error(f"--retrain {args.retrain}: a retrained arm must be among --arms ({args.arms})")
    return args


# ---------------------------------------------------------------- the device call: start or join, wait, copy
HEAVY = (".safetensors", ".bin", ".pt", ".pth", ".ckpt")


def small(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
    """No weights, no optimizer state in what comes back."""
    return None if info.name.endswith(HEAVY) or "/checkpoints/" in info.name else info


def small_main(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
    """``small``, and no task copies (the main run re-makes them from the carried splits)."""
    return None if "/tasks/" in info.name else small(info)


def collect(config, phase: str, out: Path) -> None:
    """What comes back (at most 8 files of 16 MiB): the status, log and results; the calibration's in one archive,
    the main run's in three (the screen, the evaluations, the rest: each restored by ``restore`` in the next hold)."""
    run = paths(config)["run"]
    out.mkdir(parents=True, exist_ok=True)
    for name in ("calibration.json", "status.json", "orchestrator.log", "sft_check.json"):
        if (run / name).exists():
            (out / name).write_bytes((run / name).read_bytes())
    if phase == "calibration":
        archives = {"calibration.tar.xz": ("calibration", "jobs", "logs", "sft", "manifest.json",
                                           "length_audit_device.json")}
    else:  # ~155 bytes a judged sample compressed (the calibration's first hold): the screen's 66,000 in two
        shards = sorted((run / "main" / "screen").glob("shard-*"))
        archives = {f"main_screen_{part}.tar.xz": tuple(f"main/screen/{d.name}" for d in shards
                                                       if int(d.name.split("-")[1]) % 2 == part) for part in (0, 1)}
        archives["main_evals.tar.xz"] = ("main/heldout", "main/unseen")
        archives["main.tar.xz"] = tuple(f"main/{p.name}" for p in sorted((run / "main").glob("*"))
                                        if p.name not in ("screen", "heldout", "unseen"))
    for name, items in archives.items():
        with tarfile.open(out / name, "w:xz", preset=2) as tar:
            for item in items:
                if (run / item).exists():
                    tar.add(run / item, arcname=item, filter=small if phase == "calibration" else small_main)


def restore(config, carry: str | None = None) -> list[str]:
    """A fresh machine of a later hold: the main run's state from the carried archives (``carry``, default
    ``<run>/carry``: what earlier holds' calls sent back). Never over a live run: only when no main run is here yet."""
    run = paths(config)["run"]
    if (run / "main" / "holds.json").exists():
        return []
    carried = Path(carry) if carry else run / "carry"
    if carry and not carried.is_dir():
        raise SystemExit(f"study2: --carry {carry}: no such directory")
    restored = []
    for archive in sorted(carried.glob("*.tar.xz")):
        with tarfile.open(archive) as tar:
            tar.extractall(run, filter="data")
        restored.append(archive.name)
    if restored:
        demo._log(f"restored the main run from {restored}")
    return restored


def device_call(config, args) -> int:
    run = paths(config)["run"]
    run.mkdir(parents=True, exist_ok=True)
    if args.phase == "main":
        restore(config, args.carry)
    status = gpu.Status(run)
    proc = None
    if status.get().get("phase") not in END_PHASES and gpu.running_pid(run) is None:
        argv = [sys.executable, str(Path(__file__).resolve()),
                *gpu._without([a for a in sys.argv[1:]], ("--out", "--wait-s")), "--foreground"]
        with open(run / "orchestrator.log", "a") as log:
            proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                    env={**os.environ, "PYTHONUNBUFFERED": "1"})
        (run / "orchestrator.pid").write_text(str(proc.pid))
    deadline = time.monotonic() + args.wait_s
    while time.monotonic() < deadline and status.get().get("phase") not in END_PHASES:
        alive = proc.poll() is None if proc is not None else gpu.running_pid(run) is not None
        if not alive:
            demo._log("the run stopped before it was done; its log:")
            print((run / "orchestrator.log").read_text()[-4000:])
            break
        time.sleep(5)
    if args.out:
        collect(config, args.phase, Path(args.out))
    phase = status.get().get("phase")
    demo._log(f"phase now: {phase}")
    return 0 if phase in END_PHASES else 3


def foreground(config, args) -> int:
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    run = paths(config)["run"]
    run.mkdir(parents=True, exist_ok=True)
    if args.phase == "main":
        restore(config, args.carry)
    (run / "orchestrator.pid").write_text(str(os.getpid()))
    PHASES[args.phase].run(config, args, gpu.Status(run))
    return 0


def main(argv=None) -> int:
    args = parse_args(argv)
    config = gpu.load(args)
    if args.prepare:
        print(json.dumps(prep.prepare(config, args), indent=1))
        return 0
    if args.prepare_heldout:
        print(json.dumps(prep.prepare_heldout(config, args), indent=1))
        return 0
    if args.job:
        PHASES[args.phase or "calibration"].run_job(config, args, args.job)
        return 0
    if not args.phase:
        raise SystemExit("study2: say --prepare, --prepare-heldout or --phase calibration|main|report")
    if args.phase == "report":
        print(json.dumps(report.run(config, args), indent=1)[:4000])
        return 0
    if args.phase == "main":
        main_run.committed(args)  # refused at once, in one line, without the committed calibration
    if args.foreground:
        return foreground(config, args)
    return device_call(config, args)


if __name__ == "__main__":
    sys.exit(main())
