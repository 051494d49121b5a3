"""The task generator: same seed same bytes, op-combination split, every reference verified, dedup, decontamination.

Most tests use a fake verifier (the generator's bookkeeping); one runs the CLI with the real one on two tasks.
"""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tritonrl.errors import UserError
from tritonrl.taskgen import generate_tasks, split_of
from tritonrl.tasks import load_tasks
from tritonrl.verify.shared.verdict import Stage, VerifyResult

ROOT = Path(__file__).resolve().parents[2]
FIXTURE_KERNELBENCH = ROOT / "tests" / "fixtures" / "kernelbench"


class FakeVerifier:
    """Accepts every reference except those whose task name is in ``reject``."""

    def __init__(self, reject_every: int = 0):
        self.reject_every = reject_every
        self.seen = 0

    def verify_many(self, items):
        results = []
        for item in items:
            self.seen += 1
            ok = not (self.reject_every and self.seen % self.reject_every == 0)
            assert item.code == item.task.solution  # the reference itself is what gets verified
            results.append(VerifyResult(stage=Stage.DONE if ok else Stage.FULL, valid=True, compiled=True,
                                        tiny_correct=ok, correct=ok, error=None if ok else "mismatch"))
        return results


def tree_bytes(path: Path) -> dict[str, bytes]:
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


def test_same_seed_same_bytes_other_seed_other_tasks(tmp_path):
    for name, seed in (("a", 3), ("b", 3), ("c", 4)):
        generate_tasks(12, seed, "train", tmp_path / name, verifier=FakeVerifier())
    assert tree_bytes(tmp_path / "a") == tree_bytes(tmp_path / "b")
    assert tree_bytes(tmp_path / "a") != tree_bytes(tmp_path / "c")


def test_splits_are_disjoint_by_op_combination(tmp_path):
    train = generate_tasks(40, 0, "train", tmp_path / "train", verifier=FakeVerifier())
    heldout = generate_tasks(20, 0, "heldout", tmp_path / "heldout", verifier=FakeVerifier())
    rows = {split: [json.loads(line) for line in (tmp_path / split / "tasks.jsonl").read_text().splitlines()]
            for split in ("train", "heldout")}
    signatures = {split: {r["signature"] for r in rows[split]} for split in rows}
    assert signatures["train"] and signatures["heldout"]
    assert not signatures["train"] & signatures["heldout"]
    assert all(split_of(s) == split for split, sigs in signatures.items() for s in sigs)
    assert train.other_split > 0 and heldout.other_split > 0  # drafts of the other split were drawn and dropped
    assert {r["family"] for r in rows["train"]} == {"ew", "row", "gemm"}


def test_only_verified_references_are_written_and_drops_are_counted(tmp_path):
    report = generate_tasks(10, 1, "train", tmp_path / "out", verifier=FakeVerifier(reject_every=3))
    assert report.kept == 10 and report.verified == 10 and report.verify_failed > 0
    assert len(report.failures) == report.verify_failed
    on_disk = json.loads((tmp_path / "out" / "generation_report.json").read_text())
    assert on_disk["verify_failed"] == report.verify_failed
    assert report.drawn == report.other_split + report.duplicate + report.contaminated + report.verified \
        + report.verify_failed
    written = {t.name for t in load_tasks(tmp_path / "out")}
    assert len(written) == 10 and not written & {f["name"] for f in report.failures}


def test_loaders_read_the_layout_with_references(tmp_path):
    generate_tasks(6, 2, "heldout", tmp_path / "out", verifier=FakeVerifier())
    tasks = load_tasks(tmp_path / "out")
    assert len(tasks) == 6 and all(t.solution and "class ModelNew" in t.solution for t in tasks)
    assert all("def get_inputs" in t.source and "batch_size = " in t.source for t in tasks)


def test_decontamination_drops_tasks_found_in_the_kernelbench_clone(tmp_path):
    clean = generate_tasks(8, 5, "train", tmp_path / "clean", kernelbench_dir=FIXTURE_KERNELBENCH,
                           verifier=FakeVerifier())
    assert clean.contaminated == 0
    clone = tmp_path / "kb"
    shutil.copytree(FIXTURE_KERNELBENCH, clone)
    leaked = sorted((tmp_path / "clean" / "level2").glob("*.py"))[0]
    shutil.copy(leaked, clone / "level2" / "99_Leaked.py")
    again = generate_tasks(8, 5, "train", tmp_path / "again", kernelbench_dir=clone, verifier=FakeVerifier())
    assert again.contaminated >= 1
    assert leaked.stem not in {t.name for t in load_tasks(tmp_path / "again")}


def test_duplicates_are_dropped(tmp_path, monkeypatch):
    import itertools
    import random

    import tritonrl.taskgen as generate
    from tritonrl.errors import UserError
    from tritonrl.taskgen.families import draw

    drafts = [draw(random.Random(i)) for i in range(40)]
    drafts = [d for d in drafts if split_of(d.signature) == "train"][:3]
    repeated = itertools.cycle(drafts)  # only 3 distinct tasks can ever be drawn
    monkeypatch.setattr(generate, "draw", lambda rng, scale: next(repeated))
    report = generate_tasks(3, 0, "train", tmp_path / "out", verifier=FakeVerifier())
    assert report.kept == 3 and report.duplicate == 0
    with pytest.raises(UserError, match="only 3 of 4"):
        generate_tasks(4, 0, "train", tmp_path / "more", verifier=FakeVerifier())


def test_cli_generate_verifies_references_for_real(tmp_path):
    out = tmp_path / "gen"
    cmd = [sys.executable, "-m", "tritonrl", "tasks", "generate", "--n", "2", "--seed", "0", "--split", "heldout",
           "--out", str(out), "--device", "cpu", "--workers", "2", "--json"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    assert report["kept"] == report["verified"] == 2 and report["verify_failed"] == 0
    listed = subprocess.run([sys.executable, "-m", "tritonrl", "tasks", "list", str(out), "--json"],
                            capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert listed.returncode == 0 and all(row["has_solution"] for row in json.loads(listed.stdout))
    bad = subprocess.run([sys.executable, "-m", "tritonrl", "tasks", "generate", "--n", "2", "--split", "test",
                          "--out", str(out)], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert bad.returncode == 2


@pytest.mark.parametrize("signature", ["ew:relu>tanh", "row:softmax>mul", "gemm:linear>bias>gelu"])
def test_split_is_a_function_of_the_signature_only(signature):
    assert split_of(signature) == split_of(signature) in ("train", "heldout")


def test_cli_generate_says_whether_kernelbench_overlap_was_checked(tmp_path, monkeypatch, capsys):
    """Without a clone, "KernelBench overlap 0" claimed a check that never ran."""
    import tritonrl.taskgen as generate
    from tritonrl.cli import main

    monkeypatch.delenv("KERNELBENCH_DIR", raising=False)
    real = generate.generate_tasks
    monkeypatch.setattr(generate, "generate_tasks", lambda *a, **kw: real(*a, **kw, verifier=FakeVerifier()))
    assert main(["tasks", "generate", "--n", "2", "--out", str(tmp_path / "a")]) == 0
    assert "KernelBench overlap  not checked (no KernelBench clone given)\n" in capsys.readouterr().out
    assert main(["tasks", "generate", "--n", "2", "--out", str(tmp_path / "b"), "--kernelbench",
                 str(FIXTURE_KERNELBENCH)]) == 0
    assert "KernelBench overlap        0\n" in capsys.readouterr().out


def test_a_new_split_salt_draws_a_new_partition_and_each_salt_keeps_its_splits_disjoint(tmp_path):
    """The salt is a setting: one salt, one partition of op combinations whatever the seed; a new salt, another
    partition (a held-out split no earlier study saw). Train and held-out of one salt never share a combination."""
    import random

    from tritonrl.taskgen.families import draw

    rng = random.Random(0)
    signatures = {draw(rng).signature for _ in range(400)}
    old = {s: split_of(s) for s in signatures}
    new = {s: split_of(s, salt="issue37") for s in signatures}
    assert old == {s: split_of(s, salt="tritonrl-split") for s in signatures}  # the default is the first salt
    assert sum(old[s] != new[s] for s in signatures) > len(signatures) // 10  # a different partition
    for salt in ("tritonrl-split", "issue37"):
        share = sum(split_of(s, salt=salt) == "heldout" for s in signatures) / len(signatures)
        assert 0.15 < share < 0.35  # about HELDOUT_SHARE
    seen = {}
    for split, seed in (("train", 5), ("heldout", 6), ("train", 7)):
        out = tmp_path / f"{split}{seed}"
        report = generate_tasks(6, seed, split, out, verifier=FakeVerifier(), split_salt="issue37")
        assert report.split_salt == "issue37"
        rows = [json.loads(line) for line in (out / "tasks.jsonl").read_text().splitlines()]
        seen.setdefault(split, set()).update(r["signature"] for r in rows)
        assert all(split_of(r["signature"], salt="issue37") == split for r in rows)
    assert seen["train"] and seen["heldout"] and not seen["train"] & seen["heldout"]
    with pytest.raises(UserError):
        generate_tasks(1, 0, "train", tmp_path / "empty", verifier=FakeVerifier(), split_salt="")


def test_an_unverified_stream_judges_no_reference_and_says_so(tmp_path):
    """``--no-verify``: every draft kept unjudged (an RL prompt stream), the same drafts a verified run keeps when
    every reference passes, and the report says the references were not judged."""
    judged = FakeVerifier()
    report = generate_tasks(12, 5, "train", tmp_path / "stream", verifier=judged, verify_references=False)
    assert judged.seen == 0 and report.kept == 12 and report.verified == 0
    assert json.loads((tmp_path / "stream" / "generation_report.json").read_text())["references_verified"] is False
    generate_tasks(12, 5, "train", tmp_path / "verified", verifier=FakeVerifier())
    names = [{t.name for t in load_tasks(tmp_path / d)} for d in ("stream", "verified")]
    assert names[0] == names[1]
