"""Reports rebuilt from results.jsonl alone: JSON keys, markdown tables, loud warnings, plots, comparison."""

import json

import pytest

from tritonrl.cli import main
from tritonrl.errors import UserError
from tritonrl.evaluation import report as rep
from tritonrl.verify.shared.verdict import Stage, VerifyResult


def row(task, level, i, result, completion="```python\nclass ModelNew: ...\n```"):
    return {"task": task, "level": level, "sample": i, "completion": completion, "code": None,
            "result": result.to_dict()}


def ok():
    return VerifyResult(stage=Stage.DONE, valid=True, compiled=True, tiny_correct=True, correct=True)


def no_code():
    return VerifyResult(stage=Stage.EXTRACT, flags=["no_code"])


def write_rows(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture
def mixed_rows():
    return [row("l1_a", 1, 0, ok()), row("l1_a", 1, 1, no_code(), "Sure! Here is how."),
            row("l2_b", 2, 0, VerifyResult(stage=Stage.STATIC, flags=["torch_compute"])),
            row("l2_b", 2, 1, ok())]


def test_report_from_results_alone(tmp_path, mixed_rows):
    results = write_rows(tmp_path / "results.jsonl", mixed_rows)
    assert main(["report", str(results), "--out", str(tmp_path / "r")]) == 0
    data = json.loads((tmp_path / "r" / "report.json").read_text())
    assert data["n_samples"] == 4 and data["n_tasks"] == 2
    assert data["correct_rate"] == 0.5 and data["format_rate"] == 0.75 and data["valid_rate"] == 0.5
    assert data["pass_at_k"] == {"pass@1": 0.5, "pass@2": 1.0}
    assert data["fast_p"]["fast_1"] is None and data["timing_available"] is False
    assert data["per_level"]["2"]["valid_rate"] == 0.5
    assert data["failures"]["by_stage"] == {"extract": 1, "static": 1}
    assert data["warnings"] == []
    md = (tmp_path / "r" / "report.md").read_text()
    assert "| correct | 50.0% |" in md and "unavailable (not timed)" in md and "WARNING" not in md
    assert "| l2_b | 2 |" in md and "| torch_compute | 1 |" in md
    for plot in data["plots"]:
        assert (tmp_path / "r" / plot).stat().st_size > 1000


def test_a_cpu_run_has_no_speedup_picture_and_says_why(tmp_path, mixed_rows):
    (tmp_path / "speedups.png").write_bytes(b"an earlier run's")
    built = rep.write_report(mixed_rows, tmp_path)
    assert built["plots"] == ["funnel.png"] and not (tmp_path / "speedups.png").exists()
    assert "there is no speedup plot" in (tmp_path / "report.md").read_text()
    timed = [{**r, "result": {**r["result"], "speedup": 1.7, "runtime_ms": 1.0}} for r in mixed_rows]
    assert rep.write_report(timed, tmp_path / "timed")["plots"] == ["funnel.png", "speedups.png"]


def test_zero_format_rate_is_loud(tmp_path, capsys):
    rows = [row("l1_a", 1, i, no_code(), "I would write a kernel that...") for i in range(3)]
    results = write_rows(tmp_path / "results.jsonl", rows)
    assert main(["report", str(results)]) == 0
    err = capsys.readouterr().err
    assert "WARNING" in err and "format_rate is 0" in err and "I would write a kernel" in err
    assert f"(also at the top of {tmp_path / 'report.md'}, with every sample's verdict)" in err
    md = (tmp_path / "report.md").read_text()
    assert md.splitlines()[2].startswith("> **WARNING") and "harness bug" in md


def test_zero_compile_rate_is_loud_too():
    rows = [row("l1_a", 1, 0, VerifyResult(stage=Stage.COMPILE, valid=True, flags=["import_error"],
                                           error="ModuleNotFoundError: No module named 'tritonn'"))]
    built = rep.build_report(rows)
    assert len(built["warnings"]) == 1 and "compiled_rate is 0" in built["warnings"][0]
    assert "tritonn" in built["warnings"][0]


def test_malformed_results_name_the_line(tmp_path):
    path = tmp_path / "results.jsonl"
    path.write_text(json.dumps(row("l1_a", 1, 0, ok())) + "\n{not json\n")
    with pytest.raises(UserError, match=r"results.jsonl:2: not valid JSON"):
        rep.load_results(path)
    path.write_text('{"task": "x"}\n')
    with pytest.raises(UserError, match=r":1: result row lacks level, result"):
        rep.load_results(path)
    assert main(["report", str(tmp_path / "missing.jsonl")]) == 2


def test_a_comparisons_harness_warning_names_the_report_that_explains_it(tmp_path):
    rep.write_report([row("l1_a", 1, 0, no_code())], tmp_path / "run" / "eval" / "base")
    rep.write_report([row("l1_a", 1, 0, ok())], tmp_path / "run" / "eval" / "sft")
    rep.compare_runs([tmp_path / "run" / "eval" / "base", tmp_path / "run" / "eval" / "sft"], tmp_path / "run" / "report")
    md = (tmp_path / "run" / "report" / "comparison.md").read_text()
    base, sft = (line for line in md.splitlines() if line.startswith(("| base", "| sft")))
    assert base.endswith(f"| YES: see [{tmp_path / 'run' / 'eval' / 'base' / 'report.md'}](../eval/base/report.md) |")
    assert sft.endswith("|  |")


def test_compare_eval_dirs_and_pipeline_run_dirs(tmp_path, mixed_rows):
    rep.write_report(mixed_rows, tmp_path / "base")
    rep.write_report([row("l1_a", 1, 0, ok())], tmp_path / "run" / "eval" / "rl")
    assert main(["compare", str(tmp_path / "base"), str(tmp_path / "run"), "--out", str(tmp_path / "cmp")]) == 0
    data = json.loads((tmp_path / "cmp" / "comparison.json").read_text())
    assert list(data["runs"]) == ["base", "rl"]
    assert data["runs"]["base"]["correct_rate"] == 0.5 and data["runs"]["rl"]["correct_rate"] == 1.0
    md = (tmp_path / "cmp" / "comparison.md").read_text()
    assert "| base | 4 |" in md and "| rl | 1 |" in md
    assert (tmp_path / "cmp" / "comparison.png").stat().st_size > 1000
    with pytest.raises(UserError, match="no report.json"):
        rep.compare_runs([tmp_path / "nothing"], tmp_path / "cmp2")


def test_report_lists_each_failed_sample_and_the_device_used(tmp_path):
    reduced = VerifyResult(stage=Stage.DONE, valid=True, compiled=True, tiny_correct=True, correct=True,
                           flags=["reduced_shapes", "timing_unavailable"])
    timeout = VerifyResult(stage=Stage.FULL, valid=True, compiled=True, tiny_correct=True,
                           flags=["timeout", "cpu_size_limit"],
                           error="timed out after 60 s (full stage): the task's sizes are over the CPU budget\nmore")
    rows = [row("12_Gemm", 2, 0, reduced), row("13_Conv", 2, 0, timeout), row("14_x", 2, 0, no_code())]
    built = rep.write_report(rows, tmp_path, {"device": "cpu"})
    assert [(e["task"], e["category"]) for e in built["errors"]] == [("13_Conv", "cpu_size_limit"),
                                                                      ("14_x", "extract")]
    md = (tmp_path / "report.md").read_text()
    assert "device: `cpu`" in md and "## Samples not correct" in md
    assert "| 13_Conv | 0 | cpu_size_limit | timeout, cpu_size_limit | timed out after 60 s (full stage): " in md
    assert "more" not in md  # the first line of an error only
    assert "1 of 3 samples were judged at shapes reduced" in md and "1 samples timed out on the CPU" in md


def declined(reason="not judged on this CPU: one forward of 11_VGG16 at its sizes needs 309G FLOPs ..."):
    return VerifyResult(stage=Stage.COMPILE, valid=True, correct=None, flags=["declined"], declined=reason)


def test_declined_samples_are_counted_named_and_left_out_of_every_rate(tmp_path, capsys):
    rows = [row("1_MLP", 3, 0, ok()), {**row("11_VGG16", 3, 0, declined()), "file": "11.py"},
            row("11_VGG16", 3, 1, declined()), row("2_Wide", 3, 0, no_code())]
    built = rep.write_report(rows, tmp_path, {"device": "cpu"})
    assert built["n_samples"] == 2 and built["n_tasks"] == 2  # the two judged samples: one right, one wrong
    assert built["correct_rate"] == 0.5 and built["pass_at_k"] == {"pass@1": 0.5}
    assert built["per_level"]["3"]["n_samples"] == 2 and "11_VGG16" not in built["per_task"]
    assert built["n_declined"] == 2 and built["declined_tasks"] == ["11_VGG16"]
    assert built["declined"][0] == {"task": "11_VGG16", "sample": 0, "file": "11.py", "reason": declined().declined}
    assert [e["task"] for e in built["errors"]] == ["2_Wide"]  # declined is not an error
    assert {"file": "11.py", "task": "11_VGG16", "sample": 0, "verdict": "declined"} in built["files"]
    md = (tmp_path / "report.md").read_text()
    assert "**2 samples declined** (1 tasks: 11_VGG16)" in md and "left out of every number below" in md
    assert "| 11_VGG16 | 2 | not judged on this CPU: one forward of 11_VGG16" in md
    # the CLI's summary says so too, and a verdict line says DECLINED with the reason under it
    from tritonrl.cli.evaluate import _print_summary
    from tritonrl.cli.verdicts import verdict_lines

    _print_summary(built, tmp_path)
    assert "2 declined (tasks this device cannot judge within its budget: 11_VGG16)" in capsys.readouterr().out
    lines = verdict_lines(rows[1])
    assert lines[0].split("  ")[2:4] == ["DECLINED", "compile: declined"]
    assert lines[1].strip().startswith("not judged on this CPU")
