"""KernelBook rows -> tasks, with every filter exercised by the sample fixture."""

import json
from pathlib import Path

from tritonrl.tasks import load_tasks
from tritonrl.tasks.kernelbook import load_kernelbook
from tritonrl.tasks.variants import run_source

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SAMPLE = FIXTURES / "kernelbook_sample.jsonl"
ROWS = [json.loads(line) for line in SAMPLE.read_text().splitlines()]


def _expected(word: str) -> int:
    return sum(row["note"].startswith(word) for row in ROWS)


def test_filters_count_each_kind_of_row():
    tasks, report = load_kernelbook(str(SAMPLE), kernelbench_dir=FIXTURES / "kernelbench")
    assert report.rows == len(ROWS)
    assert report.unparsable == _expected("unparsable") + _expected("malformed")
    assert report.not_pure_triton == _expected("not pure")
    assert report.duplicate == _expected("duplicate")
    assert report.contaminated == _expected("contaminated")
    assert report.kept == len(tasks) == _expected("kept")
    assert "KernelBench overlap" in report.table()


def test_without_kernelbench_nothing_is_decontaminated():
    tasks, report = load_kernelbook(str(SAMPLE))
    assert report.contaminated == 0 and len(tasks) == _expected("kept") + _expected("contaminated")


def test_rows_become_runnable_kernelbench_format_tasks():
    tasks, _ = load_kernelbook(str(SAMPLE), kernelbench_dir=FIXTURES / "kernelbench")
    by_entry = {t.meta["module_name"]: t for t in tasks}
    for task in tasks:
        assert task.origin == "kernelbook" and "@triton.jit" in task.solution
        assert "class ModelNew(" in task.solution
        assert run_source(task.source).ok
    assert by_entry["AddReluSum"].level == 2 and by_entry["SimpleAdd"].level == 1
    assert "'scale': 3.0" in by_entry["ScaledMul"].source


def test_limit_caps_rows_read_and_load_tasks_dispatches():
    _, report = load_kernelbook(str(SAMPLE), limit=3)
    assert report.rows == 3
    assert {t.origin for t in load_tasks(str(SAMPLE))} == {"kernelbook"}
