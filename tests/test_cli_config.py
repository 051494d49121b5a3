"""``tritonrl config show|validate`` and the promise that a bad config value stops a run within a second,
with exit status 2 and a one-line message naming the key, before torch or TRL are imported."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from tritonrl.cli import main

ROOT = Path(__file__).resolve().parents[1]
SMOKE = str(ROOT / "configs" / "smoke.yaml")
BAD_VALUES = ["reward.preset=stagedd", "rl.algo=ppo", "rl.vllm_mode=bogus", "verify.backend=rayy",
              "verify.device=tpu", "eval.backend=x", "rl.steps=-5"]
# What each subprocess reports after main() returns: its exit status and whether the heavy stack was imported.
DRIVER = ("import sys; from tritonrl.cli import main; rc = main(sys.argv[1:]); "
          "print('heavy' if {'torch', 'trl', 'transformers'} & set(sys.modules) else 'light'); sys.exit(rc)")


CASES = [("rl", v) for v in BAD_VALUES] + [("sft", "verify.device=tpu"), ("pipeline", "eval.backend=x")]


@pytest.mark.parametrize(("command", "override"), CASES, ids=[f"{c}:{v}" for c, v in CASES])
def test_bad_value_fails_fast_through_the_cli(command, override):
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-c", DRIVER, command, "--config", SMOKE, "--set", override],
                          capture_output=True, text=True, env=env, timeout=60)
    elapsed = time.monotonic() - start
    key = override.split("=")[0]
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and key in lines[0] and lines[0].startswith("tritonrl: error:"), done.stderr
    assert done.stdout.strip() == "light"  # failed before the training stack was imported (that takes seconds)
    assert elapsed < 5.0  # typically ~0.2 s including the interpreter's start; generous for busy machines


def test_generated_flags_take_type_choices_and_help_from_the_field(capsys):
    with pytest.raises(SystemExit):
        main(["rl", "--help"])
    out = " ".join(capsys.readouterr().out.split())  # argparse wraps lines
    assert "{grpo,rloo,best-of-n}" in out and "config key rl.algo" in out and "config key run.run_dir" in out
    with pytest.raises(SystemExit) as info:
        main(["rl", "--config", SMOKE, "--algo", "ppo"])
    assert info.value.code == 2


def test_flags_override_set_and_yaml():
    from argparse import Namespace

    from tritonrl.cli.train import RL_FLAGS, build_config

    args = Namespace(config=SMOKE, overrides=["run.run_dir=a", "rl.algo=grpo"], flags=RL_FLAGS,
                     cfg__rl__algo="rloo", cfg__run__run_dir="null", cfg__run__resume=True)
    config = build_config(args)
    assert config.rl.algo == "rloo" and config.run.run_dir == "null" and config.run.resume is True


def test_show_prints_the_resolved_config_as_yaml(capsys):
    assert main(["config", "show", "--config", SMOKE, "--set", "rl.steps=3"]) == 0
    shown = yaml.safe_load(capsys.readouterr().out)
    assert shown["rl"]["steps"] == 3 and shown["rl"]["algo"] == "grpo" and shown["verify"]["device"] == "cpu"
    assert shown["eval"]["k"] == 2  # the eval/pipeline sections too
    assert main(["config", "show", "--comments"]) == 0
    commented = capsys.readouterr().out
    assert "  algo: grpo  # the RL algorithm" in commented
    assert yaml.safe_load(commented)["rl"]["scale_rewards"] == "batch"  # still valid YAML


def test_validate_reports_each_bad_file_in_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("rl:\n  algo: ppo\n")
    assert main(["config", "validate", SMOKE, str(bad)]) == 2
    captured = capsys.readouterr()
    assert f"ok {SMOKE}" in captured.out
    assert captured.err.strip() == f"tritonrl: error: {bad}: unknown rl.algo 'ppo'; choose one of grpo, rloo, best-of-n"


def test_validate_reports_every_error_of_a_file_duplicate_keys_with_their_lines(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("sft:\n  max_steps: 2\nrl:\n  algo: ppo\n  steps: -3\nsft:\n  learning_rate: x\n"
                   "verify:\n  stepz: 1\n")
    assert main(["config", "validate", str(bad)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.strip().splitlines() == [
        f"tritonrl: error: {bad}:6: duplicate key 'sft' (first at line 1); YAML would keep only the last, so merge "
        "the two",
        f"tritonrl: error: {bad}: config key sft.learning_rate = 'x' does not match type float",
        f"tritonrl: error: {bad}: unknown rl.algo 'ppo'; choose one of grpo, rloo, best-of-n",
        f"tritonrl: error: {bad}: rl.steps = -3 is out of range; it must be >= 1",
        f"tritonrl: error: {bad}: unknown config key verify.stepz (known: " + captured.err.split("verify.stepz (known: ")[1]
        .splitlines()[0],
    ]


def test_validate_still_checks_cross_field_rules(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("rl:\n  algo: best-of-n\nbest_of_n:\n  min_reward: 99\n")
    assert main(["config", "validate", str(bad)]) == 2
    assert "best_of_n.min_reward = 99" in capsys.readouterr().err


def test_a_run_refuses_a_config_with_a_duplicate_key(tmp_path, capsys):
    """The smoke config once had two ``pipeline:`` sections: PyYAML kept the second and dropped the first's
    verifier settings without a word."""
    bad = tmp_path / "two.yaml"
    bad.write_text("verify:\n  device: cpu\npipeline:\n  in_distribution: true\npipeline:\n  stages: [data]\n")
    assert main(["config", "show", "--config", str(bad)]) == 2
    assert capsys.readouterr().err.strip() == (f"tritonrl: error: {bad}:5: duplicate key 'pipeline' (first at line "
                                               "3); YAML would keep only the last, so merge the two")
