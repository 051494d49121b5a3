"""benchmarks/serve_load.py: its mix and its report's arithmetic (fast); a bounded real run on loopback (``slow``:
2 clients x 3 requests against a real ``tritonrl serve``)."""

from __future__ import annotations

import json

import pytest

from tests.helpers.scripts import load_script


@pytest.fixture(scope="module")
def bench():
    return load_script("benchmarks/serve_load.py")


def test_the_mix_is_one_honest_kernel_in_n_and_cheap_rejections(bench):
    mix = bench.load_mix()
    kinds = [bench.item_at(k, 5, mix)[0] for k in range(10)]
    assert kinds.count("honest") == 2 and kinds[0] == "honest" and kinds[5] == "honest"
    assert {kind for kind in kinds if kind != "honest"} <= {"no_code", "pytorch_fallback", "no_kernel", "syntax_error"}
    assert [expected for _, _, expected in mix] == [True, False, False, False, False]


def test_percentiles_and_metrics_parse(bench):
    assert bench.percentile([3.0, 1.0, 2.0], 0.5) == 2.0
    assert bench.percentile(list(range(101)), 0.99) == 99
    text = ("# HELP x\ntritonrl_serve_batch_items_count 4.0\ntritonrl_serve_batch_items_sum 10.0\n"
            "tritonrl_serve_busy_seconds_total 2.5\ntritonrl_serve_infrastructure_failures_total 0.0\n")
    assert bench._metrics(text) == {"batches": 4, "mean_batch_items": 2.5, "busy_s": 2.5,
                                    "infrastructure_failures": 0}


def test_the_service_gets_the_settings_the_in_process_side_gets(bench):
    assert bench.service_settings(bench.parse_args(["--out", "x"])) == []
    args = bench.parse_args(["--no-timing", "--workers-per-gpu", "4", "--out", "x"])
    assert bench.service_settings(args) == ["--set", "verify.timing=false", "--set", "verify.workers_per_gpu=4"]


@pytest.mark.slow
def test_a_bounded_load_run_answers_every_request_once(bench, tmp_path):
    out = tmp_path / "serve_load.json"
    status = bench.main(["--device", "cpu", "--workers", "2", "--clients", "2", "--requests", "3",
                         "--out", str(out)])
    report = json.loads(out.read_text())
    assert status == 0
    load = report["load"]
    assert load["answered_once"] and load["all_verdicts_as_expected"] and load["statuses"] == {"200": 6}
    assert load["service"]["exit_status"] == 0
    assert {"date", "commit", "host"} <= set(report["machine"]) and "serve_load.py" in report["command"]


@pytest.mark.slow
def test_compare_keeps_both_sides_warm_and_saves_after_every_pass(bench, tmp_path):
    saved = []
    args = bench.parse_args(["--device", "cpu", "--part", "compare", "--tasks", "l1_relu", "--repeats", "2",
                             "--workers", "1", "--control", "--out", str(tmp_path / "compare.json")])
    part = bench.run_compare(args, save=saved.append)
    assert len(saved) == 3 + 3 * 2 and all(p["partial"] for p in saved)  # three warm passes, then two of each
    assert len(part["passes_s"]["in_process"]) == len(part["passes_s"]["http"]) == len(part["passes_s"]["control"]) == 2
    assert part["order"] == [["in_process", "http", "control"], ["control", "http", "in_process"]]
    assert all(s > 0 for s in part["charged_s"]["http"]) and "control_spread" in part
    assert part["same_verdicts"] and part["correct"] == 1 and part["tasks"] == 1


def test_compare_figures_set_the_overhead_against_an_a_a_run(bench):
    figures = bench.compare_figures({"in_process": [10.0, 12.0, 11.0], "http": [11.5, 11.0, 12.0],
                                     "control": [10.5, 11.5, 11.0]})
    assert figures["overhead"] == 0.0455 and figures["overhead_within_5pct"]  # 11.5 / 11 - 1
    assert figures["control_spread"] == 0.0 and figures["http_over_control"] == 0.0455
    assert "control_spread" not in bench.compare_figures({"in_process": [1.0], "http": [1.2]})
