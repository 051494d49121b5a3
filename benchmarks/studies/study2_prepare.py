"""Study two's data (issue 50), on the CPU before any device call: the splits from three generated directories,
the tokenizer, the length audit, ``prepare.json`` (``--prepare``); and, before the main run, the held-out split
alone, re-made from its regenerated pool and checked against the digest committed at preparation
(``--prepare-heldout``: the held-out split stays off every device until the main run).
"""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path

import study2_criterion as reg
import study2_jobs as jobs
from study2_jobs import demo, paths

PREPARED = Path(__file__).resolve().parents[2] / "docs" / "results" / "study2_prepare.json"


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
    jobs.build_model(config, args)
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
              "tokenizer_sha256": jobs.tokenizer_digest(config),
              "lengths": audit["splits"]}
    (p["run"] / "prepare.json").write_text(json.dumps(report, indent=1) + "\n")
    return report


def prepare_heldout(config, args, committed: Path = PREPARED) -> dict:
    """The held-out split from the regenerated held-out pool (``tasks/heldout_pool``: the registration's command),
    cut exactly as ``prepare`` cut it, and its ``tasks.jsonl`` checked against the committed sha256 (and validation
    with it): a different split stops here, before anything reaches a device."""
    p = paths(config)
    if not (p["heldout_pool"] / "generation_report.json").exists():
        raise SystemExit(f"study2: {p['heldout_pool']} is not a finished generated split (tritonrl tasks generate)")
    held, val = demo.split_by_signature(demo.read_rows(p["heldout_pool"]), args.validation_n)
    demo.subset(p["heldout_pool"], p["heldout"], [r["name"] for r in held])
    want = json.loads(committed.read_text())["sha256"]
    got = {"heldout": hashlib.sha256((p["heldout"] / "tasks.jsonl").read_bytes()).hexdigest(),
           "validation_names": sorted(r["name"] for r in val) == sorted(r["name"] for r in demo.read_rows(
               p["validation"])) if (p["validation"] / "tasks.jsonl").exists() else None}
    if got["heldout"] != want["heldout"]:
        raise SystemExit(f"study2: the re-made held-out split differs from the prepared one ({got['heldout'][:12]} "
                         f"!= {want['heldout'][:12]}); nothing goes to the device")
    return {"heldout_tasks": len(held), "sha256": got["heldout"], "validation_names_equal": got["validation_names"]}
