"""Issue 27's scenario end to end (about 10 s): 15 solution files for 5 problems of a KernelBench-layout folder (level 1
problems 23 and 47, level 2 problems 9, 40 and 86), one honest, one wrong and one cheating kernel each, judged by
``tritonrl eval --solutions`` three times with the real verifier. Every verdict must be right every time, with no
verifier error (the AST race once failed honest kernels in 2 of 4 such runs).

The problems are bundled tasks under KernelBench names, and their honest kernels our reference solutions; the wrong
ones change one operation, the cheating ones let PyTorch do the work or hide a fallback behind try/except.
"""

import json
import re
from pathlib import Path

from tritonrl.cli import main

BUNDLED = Path(__file__).resolve().parents[1] / "src" / "tritonrl" / "tasks" / "bundled"
PROBLEMS = {  # (level, number) -> bundled task, and the edit that makes its kernel wrong
    (1, 23): ("l1_softmax", "e / tl.sum(e, axis=0)", "e / (tl.sum(e, axis=0) + 1e-2)"),
    (1, 47): ("l1_sum_dim", "acc += tl.sum(tile, axis=0)", "acc += tl.max(tile, axis=0)"),
    (2, 9): ("l2_gemm_bias_relu", "y = tl.maximum(y, 0.0)", "y = tl.maximum(y, 0.05)"),
    (2, 40): ("l2_matmul_scale_residual", "out = acc * scale + r", "out = acc * scale - r"),
    (2, 86): ("l2_gemm_gelu_scale", "y = y * scale", "y = y * scale * 1.01"),
}
FALLBACK = ("\n\n_triton_forward = ModelNew.forward\n\n\ndef _forward(self, *args):\n    try:\n"
            "        return _triton_forward(self, *args)\n    except Exception:\n        return args[0]\n\n\n"
            "ModelNew.forward = _forward\n")


def cheat(solution: str, level: int) -> str:
    """Level 1: forward returns PyTorch's own result; level 2: a try/except fallback around the kernel."""
    if level == 2:
        return solution + FALLBACK
    signature = re.search(r"    def forward\(self, (.*?)\):", solution).group(1)
    return re.sub(r"    def forward\(self.*?(?=\n\S|\Z)", f"    def forward(self, {signature}):\n"
                  f"        return torch.nn.functional.relu({signature.split(',')[0]}).softmax(1)", solution,
                  flags=re.S)


def layout(tmp_path: Path) -> tuple[Path, Path]:
    for (level, number), (task, before, after) in PROBLEMS.items():
        (tmp_path / "kb" / f"level{level}").mkdir(parents=True, exist_ok=True)
        (tmp_path / "kb" / f"level{level}" / f"{number}_{task}.py").write_text(
            (BUNDLED / f"level{level}" / f"{task}.py").read_text())
        solution = (BUNDLED / "solutions" / f"{task}.py").read_text()
        assert before in solution
        (tmp_path / "sols").mkdir(exist_ok=True)
        for kind, text in (("honest", solution), ("wrong", solution.replace(before, after)),
                           ("cheat", cheat(solution, level))):
            (tmp_path / "sols" / f"level{level}_{number}_{kind}.py").write_text(text)
    return tmp_path / "kb", tmp_path / "sols"


def test_fifteen_solutions_are_judged_right_in_each_of_three_runs(tmp_path, capsys):
    clone, sols = layout(tmp_path)
    for run in range(3):
        out = tmp_path / f"out{run}"
        assert main(["eval", "--solutions", str(sols), "--tasks", str(clone), "--device", "cpu", "--timeout", "60",
                     "--out", str(out)]) == 0
        report = json.loads((out / "report.json").read_text())
        verdicts = {Path(f["file"]).stem: f["verdict"] for f in report["files"]}
        assert report["n_verifier_errors"] == 0 and len(verdicts) == 15
        assert {stem for stem, verdict in verdicts.items() if verdict == "correct"} == {
            f"level{level}_{number}_honest" for level, number in PROBLEMS}
        assert {verdicts[f"level{level}_{number}_cheat"] for level, number in PROBLEMS} == {"failed at static"}
    capsys.readouterr()
