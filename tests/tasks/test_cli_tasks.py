"""`tritonrl tasks ...` and `tritonrl prompt`, run in-process."""

import json
import shutil
from pathlib import Path

from tritonrl.cli import main

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def test_list_bundled_table_and_json(capsys):
    assert main(["tasks", "list", "bundled"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].split()[:3] == ["name", "level", "origin"] and "level 1:" in out.splitlines()[-1]
    assert main(["tasks", "list", "bundled", "--level", "2", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows and all(r["level"] == 2 and r["origin"] == "bundled" and r["name"] for r in rows)


def test_list_generated_level2_dir_of_100(tmp_path, capsys):
    fixtures = sorted((FIXTURES / "kernelbench").glob("level*/*.py"))
    level2 = tmp_path / "level2"
    level2.mkdir()
    for number in range(1, 101):
        shutil.copy(fixtures[number % len(fixtures)], level2 / f"{number}_Fixture.py")
    assert main(["tasks", "list", str(tmp_path), "--level", "2", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == 100 and rows[-1]["name"] == "100_Fixture"


def test_list_kernelbook_reports_filters_on_stderr(capsys):
    assert main(["tasks", "list", str(FIXTURES / "kernelbook_sample.jsonl")]) == 0
    captured = capsys.readouterr()
    assert "duplicate" in captured.err and "kb_0_SimpleAdd" in captured.out


def test_show_and_variants(capsys):
    path = str(FIXTURES / "kernelbench" / "level2" / "2_Conv2d_GroupNorm_ReLU.py")
    assert main(["tasks", "show", path]) == 0
    out = capsys.readouterr().out
    assert "level 2" in out and "reference solution: no" in out and "class Model" in out
    assert main(["tasks", "variants", path]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("tiny") and "batch_size 32 -> 2" in lines[0]
    assert [line.split()[0] for line in lines[1:]] == ["alt1", "alt2", "cpu"]
    assert lines[-1] == "cpu    full trials reduced: batch_size 32 -> 16, out_channels 64 -> 16, height 96 -> 24"


def test_prompt(capsys):
    name = json.loads((main(["tasks", "list", "bundled", "--json"]), capsys.readouterr().out)[1])[0]["name"]
    assert main(["prompt", name]) == 0
    out = capsys.readouterr().out
    assert "--- system ---" in out and "--- user ---" in out and "class Model" in out


def test_user_errors_exit_2_with_one_line(capsys):
    for argv in (["tasks", "list", "/no/such/dir"], ["tasks", "show", "no_such_task"],
                 ["prompt", "l1_nope"], ["tasks", "variants", "/no/such.py"]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith("tritonrl: error:") and len(err.strip().splitlines()) == 1


def test_list_kernelbook_decontaminates_against_a_kernelbench_clone(capsys, monkeypatch):
    monkeypatch.delenv("KERNELBENCH_DIR", raising=False)
    sample = str(FIXTURES / "kernelbook_sample.jsonl")
    assert main(["tasks", "list", sample, "--json"]) == 0
    out = capsys.readouterr()
    kept = {row["name"] for row in json.loads(out.out)}
    assert "KernelBench overlap  not checked (no KernelBench clone given)" in out.err
    assert main(["tasks", "list", sample, "--json", "--decontaminate", str(FIXTURES / "kernelbench")]) == 0
    out = capsys.readouterr()
    clean = {row["name"] for row in json.loads(out.out)}
    assert clean < kept  # the rows copying a KernelBench fixture are gone, nothing new appears
    assert "KernelBench overlap" in out.err
    assert main(["tasks", "list", sample, "--decontaminate", str(FIXTURES)]) == 2  # not a clone: one-line error
    assert "not a KernelBench clone" in capsys.readouterr().err


def test_training_data_is_decontaminated_when_configured(monkeypatch):
    from tritonrl.config import DataConfig
    from tritonrl.train.data import load_training_tasks

    monkeypatch.delenv("KERNELBENCH_DIR", raising=False)
    sample = str(FIXTURES / "kernelbook_sample.jsonl")
    everything = load_training_tasks(DataConfig(source=sample, levels=[1, 2, 3]))
    clean = load_training_tasks(DataConfig(source=sample, levels=[1, 2, 3],
                                           kernelbench_dir=str(FIXTURES / "kernelbench")))
    assert {t.name for t in clean} < {t.name for t in everything}


def test_variants_of_a_level3_shaped_task_show_its_depth_and_what_a_cpu_runs(tmp_path, capsys):
    from tests.tasks.test_variants import DEEP_MLP
    from tests.verify.test_declined import FIXED_WEIGHT

    (tmp_path / "deep_mlp.py").write_text(DEEP_MLP)
    assert main(["tasks", "variants", str(tmp_path / "deep_mlp.py")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == ("tiny   batch_size 256 -> 2, input_size 2048 -> 9, hidden_layer_sizes [512] * 12 -> [8, 8], "
                        "output_size 2048 -> 9")
    assert lines[-1] == ("cpu    full trials reduced: batch_size 256 -> 64, input_size 2048 -> 512, hidden_layer_sizes "
                         "[512] * 12 -> [128] * 12, output_size 2048 -> 512")
    (tmp_path / "fixed_weight.py").write_text(FIXED_WEIGHT)
    assert main(["tasks", "variants", str(tmp_path / "fixed_weight.py")]) == 0
    last = capsys.readouterr().out.splitlines()[-1]
    assert last.startswith("cpu    declined: not judged on this CPU: one forward of fixed_weight at its sizes needs")
