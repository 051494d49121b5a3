"""``benchmarks/redteam_gpu.py`` on the CPU: a directory of cases judged in the correctness mode, an honest case
accepted and a wrong one rejected, each as its header expects; a case without its headers is refused in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.scripts import load_script
from tritonrl.tasks import get_task


@pytest.fixture(scope="module")
def bench():
    return load_script("benchmarks/redteam_gpu.py", "redteam_gpu_bench")


def _case(directory: Path, name: str, expect: str, code: str) -> None:
    (directory / f"{name}.py").write_text(f"# task: l1_relu\n# expect: {expect}\n{code}")


def test_cases_are_judged_against_their_headers(bench, tmp_path):
    honest = get_task("l1_relu").solution
    wrong = honest.replace("tl.where(x > 0, x, 0.0)", "tl.where(x > 0, x, 0.0) + 0.01")
    assert wrong != honest
    _case(tmp_path, "honest", "done", honest)
    _case(tmp_path, "honest_said_accept", "accept", honest)
    _case(tmp_path, "wrong_accepted_by_mistake", "done", wrong)  # expected accepted: shows up as not as expected
    out = tmp_path / "out.json"
    code = bench.main([str(tmp_path), "--device", "cpu", "--modes", "correctness", "--out", str(out)])
    report = json.loads(out.read_text())
    rows = {r["case"]: r for r in report["modes"]["correctness"]["rows"]}
    assert rows["honest"]["correct"] is True and rows["honest"]["as_expected"]
    assert rows["honest_said_accept"]["as_expected"]
    assert rows["wrong_accepted_by_mistake"]["correct"] is False
    assert report["modes"]["correctness"]["not_as_expected"] == ["wrong_accepted_by_mistake"]
    assert code == 1


def test_a_case_without_headers_is_refused(bench, tmp_path):
    (tmp_path / "bare.py").write_text("import torch\n")
    with pytest.raises(SystemExit, match="needs '# task: NAME'"):
        bench.cases(tmp_path)
    with pytest.raises(SystemExit, match="unknown"):
        bench.main([str(tmp_path), "--modes", "speed"])
