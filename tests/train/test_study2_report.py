"""Study two's driver around the registered rules (benchmarks/studies/study2_report.py, study2_main.py): the result
recomputed from per-task counts by ``study2_criterion`` alone, the main phase's refusal without a committed
calibration, the constant rate of Best-of-N and SFT+, and which held-out evaluations each arm gets."""

import json
import os
import random
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks" / "studies"))

import study2_calibration as calib  # noqa: E402
import study2_criterion as reg  # noqa: E402
import study2_main as main_run  # noqa: E402
import study2_report as report  # noqa: E402

ARMS = ("sft_star@1.0", "grpo_s0@1.0", "grpo_s1@1.0", "control_s0@1.0", "rloo@1.0", "bon@1.0", "sftplus@1.0",
        "sft_best@best", "grpo_s0@best", "grpo_s1@best")


def constructed(gain: int, tasks: int = 120, seed: int = 0) -> dict:
    """Per-task counts where GRPO gets ``gain`` more of 16 samples right than SFT@S* on every task."""
    rng = random.Random(seed)
    base = {f"t{i}": rng.randrange(0, 13) for i in range(tasks)}
    shift = {"grpo_s0": gain, "grpo_s1": gain, "bon": gain // 2}

    def arm(key):
        k = 8 if key.split("@")[0] in ("rloo", "bon", "sftplus") or key.endswith("@best") else 16
        d = shift.get(key.split("@")[0], 0)
        return {t: [min(k, max(0, round((c + d) * k / 16) + rng.choice((-1, 0, 0, 1)))), k] for t, c in base.items()}

    return {"tasks": {t: {"signature": f"op{int(t[1:]) // 3}", "family": f"f{int(t[1:]) % 4}", "distance": 1}
                      for t in base},
            "counts": {key: arm(key) for key in ARMS},
            "unseen": {"grpo_s0": {"p1": [2, 4], "p2": [4, 4]}},
            "calibration": {"s_star": 700, "sft_best": 900, "headroom_val": 0.12, "sft_best_temperature": "1.0",
                            "learning_rate": 3e-5},
            "verifier_calls": {arm: reg.verifier_calls(arm, 60) for arm in ("grpo_s0", "grpo_s1", "control_s0",
                                                                            "rloo", "bon", "sftplus")},
            "device": "NVIDIA H200", "runs": [{"run": "grpo_s0@1.0", "status": "done"}]}


def test_the_result_is_the_criterions_figures_from_the_counts_alone(tmp_path):
    doc = constructed(gain=4)
    out = report.result(json.loads(json.dumps(doc)), resamples=500)
    assert set(out) >= {"preregistration_commit", "criterion", "criterion_met", "hypotheses", "device",
                        "heldout_tasks", "headroom_val", "grpo_minus_sft", "arms", "algorithms", "runs"}
    cluster = {t: v["signature"] for t, v in doc["tasks"].items()}
    rates = {k.removesuffix("@1.0"): reg.task_rates({t: tuple(c) for t, c in v.items()})
             for k, v in doc["counts"].items()}
    figures = reg.figures(rates, cluster, resamples=500)
    assert out["hypotheses"] == reg.hypotheses(figures, 0.12) == {"H1": True, "H2": True, "H3": True}
    assert out["criterion_met"] is True and out["grpo_minus_sft"]["ci95"] == figures["grpo_minus_sft"]["ci95"]
    assert out["grpo_minus_sft"]["mean"] == pytest.approx(figures["grpo_minus_sft"]["mean"])
    assert out["algorithms"]["equal_budget"] and out["algorithms"]["winner"] in (None, "grpo")
    assert out["algorithms"]["pairs"] == reg.algorithms(rates, cluster, resamples=500)["pairs"]
    assert out["arms"]["grpo_s0"]["verifier_calls"] == 60 * 32 * 8 and out["arms"]["sftplus"]["verifier_calls"] == 0
    assert out["heldout_tasks"] == 120 and out["unseen"]["grpo_s0"] == pytest.approx(0.75)
    assert report.plot(out, tmp_path / "study2.png").endswith("study2.png") and (tmp_path / "study2.png").stat().st_size


def test_no_gain_misses_and_a_missing_arm_is_no_criterion():
    out = report.result(constructed(gain=0), resamples=500)
    assert out["criterion_met"] is False and not out["hypotheses"]["H1"]
    doc = constructed(gain=4)
    del doc["counts"]["control_s0@1.0"]
    out = report.result(doc, resamples=200)
    assert out["criterion_met"] is False and out["missing"] == ["control_s0"]


def test_the_main_phase_refuses_without_a_finished_committed_calibration(tmp_path):
    with pytest.raises(SystemExit, match="needs the committed calibration result"):
        calib.load_committed(tmp_path / "study2_calibration.json")
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"s_star": 700, "sft_best": 900, "headroom_val": 0.12, "futile": False}))
    with pytest.raises(SystemExit, match="not a finished calibration"):
        calib.load_committed(path)
    done = {"s_star": 700, "sft_best": 900, "headroom_val": 0.05, "futile": True, "digests": {},
            "sft_best_temperature": "1.0", "learning_rate": 3e-5}
    path.write_text(json.dumps(done))
    with pytest.raises(SystemExit, match="futility rule"):
        calib.load_committed(path)
    assert calib.load_committed(path, rehearsal=True)["s_star"] == 700
    import study2

    with pytest.raises(SystemExit, match="needs the committed calibration"):
        study2.main(["--config", str(ROOT / "configs" / "study2.yaml"), "--phase", "main", "--calibration",
                     str(tmp_path / "none.json")])


def test_best_of_n_and_sft_plus_continue_at_sfts_scheduled_rate_at_s_star():
    from types import SimpleNamespace

    sft = SimpleNamespace(learning_rate=1e-3, max_steps=1200, warmup_ratio=0.05)  # 60 warm-up steps
    assert main_run.sft_rate_at(sft, 30) == pytest.approx(1e-3 * 30 / 60)
    assert main_run.sft_rate_at(sft, 700) == pytest.approx(1e-3 * 500 / 1140)
    assert main_run.sft_rate_at(sft, 1200) == pytest.approx(0.0)


def test_best_of_n_samples_as_registered_and_as_a_grpo_step_does():
    from tritonrl.config import PipelineConfig, load_config

    config = load_config(str(ROOT / "configs" / "study2.yaml"), [], schema=PipelineConfig)
    bon = main_run.bon_settings(config)
    assert (bon.n, bon.top_k, bon.rounds, bon.reward_weighted) == (8, 8, 1, False)
    assert bon.min_reward == config.reward.full_credit  # every correct sample is kept
    assert bon.batch_size * bon.n == config.rl.per_device_batch_size == 256  # 32 prompts a generate call


def test_each_arm_gets_the_registered_evaluations():
    cal = {"s_star": 700, "sft_best": 900, "sft_best_temperature": "greedy"}
    assert main_run.heldout_evals("grpo_s0", cal) == ["heldout:grpo_s0@1.0", "heldout:grpo_s0@greedy"]
    assert main_run.heldout_evals("control_s0", cal) == ["heldout:control_s0@1.0"]
    assert main_run.heldout_evals("sft_best", cal) == ["heldout:sft_best@greedy"]
    assert main_run.evals_of("bon", cal) == ["unseen:bon", "heldout:bon@1.0"]
    at_one = {**cal, "sft_best_temperature": "1.0"}
    assert main_run.heldout_evals("grpo_s1", at_one) == ["heldout:grpo_s1@1.0"]  # its first 8 of 16 at 1.0
    assert main_run.heldout_evals("sft_best", at_one) == ["heldout:sft_best@1.0"]
    assert main_run.heldout_evals("sft_best", {**at_one, "sft_best": 700}) == []  # S*'s first 8 of 16
    assert [main_run.K_AT_1[a] for a in main_run.ARMS] == [16, 16, 16, 8, 8, 8] and main_run.K_AT_1["sft_star"] == 16


def test_a_new_hold_keeps_an_arm_whose_samples_are_recorded_and_abandons_one_cut_short(tmp_path):
    from types import SimpleNamespace

    import study2_jobs as jobs

    run, tasks = tmp_path / "run", tmp_path / "tasks"
    (tasks / "heldout").mkdir(parents=True)
    (tasks / "heldout" / "tasks.jsonl").write_text("".join(json.dumps({"name": t}) + "\n" for t in ("a", "b")))
    config = SimpleNamespace(run=SimpleNamespace(run_dir=str(run)),
                             data=SimpleNamespace(sft_sources=[str(tasks / "sft")]),
                             eval=SimpleNamespace(tasks=str(tasks / "heldout")))
    cal = {"s_star": 20, "sft_best": 20, "sft_best_temperature": "greedy", "headroom_val": 0.1, "futile": False,
           "digests": {}, "learning_rate": 3e-5}
    (tmp_path / "cal.json").write_text(json.dumps(cal))
    args = SimpleNamespace(set=[], config="c.yaml", rehearsal=False, calibration=str(tmp_path / "cal.json"),
                           heldout_n=None, arms=None)
    main = run / "main"
    q = jobs.Queue(config, args, ["0#0"], "main", root=main)
    jobs.atomic_json(main / "holds.json", [{"hold": 1, "arms": ["grpo_s0", "control_s0"]}])
    jobs.atomic_json(main / "prompts.json", {"unseen": ["p1", "p2"]})

    def record(name, samples):
        kind, _, what = name.partition(":")
        out = main / kind / what
        out.mkdir(parents=True)
        (out / "completions.jsonl").write_text("".join(json.dumps({"task": t, "sample": i, "completion": "x"}) + "\n"
                                                       for t, i in samples))

    def done(name):
        (main / "jobs" / f"{name.replace(':', '_').replace('@', '_at_')}.json").write_text(json.dumps({"job": name}))

    for name in ("arm:grpo_s0", "unseen:grpo_s0", "heldout:grpo_s0@greedy", "arm:control_s0"):
        done(name)
    record("heldout:grpo_s0@1.0", [(t, i) for t in "ab" for i in range(16)])  # sampled, its judging cut short
    record("heldout:control_s0@1.0", [("a", i) for i in range(5)])  # cut short while sampling
    main_run.begin_hold(config, args, q, cal)
    assert [h["hold"] for h in main_run.holds(config)] == [1, 2]
    assert q.done("arm:grpo_s0") and (main / "heldout" / "grpo_s0@1.0").exists()
    assert not q.done("arm:control_s0") and (main / "abandoned" / "hold-1" / "heldout-control_s0@1.0").exists()
    runs = [json.loads(line) for line in (main / "heldout_runs.jsonl").read_text().splitlines()]
    assert [(r["run"], r["status"].split(":")[0]) for r in runs] == [("control_s0@1.0", "abandoned")]
    assert main_run.hold_arms(config, args, q, cal) == ["grpo_s1", "control_s0", "rloo", "bon", "sftplus"]


def test_retrain_voids_a_finished_arm_once_with_its_reason(tmp_path):
    """``--retrain ARM --why``: a finished arm whose reward was found broken is kept under ``abandoned/hold-H`` with
    its evaluations, each held-out one recorded as abandoned with the reason, and trains again in the new hold; the
    hold's record says so (``begin_hold`` runs once a hold: a hold's later calls leave it alone)."""
    from types import SimpleNamespace

    import study2
    import study2_jobs as jobs

    run, tasks = tmp_path / "run", tmp_path / "tasks"
    (tasks / "heldout").mkdir(parents=True)
    (tasks / "heldout" / "tasks.jsonl").write_text(json.dumps({"name": "a"}) + "\n")
    config = SimpleNamespace(run=SimpleNamespace(run_dir=str(run)),
                             data=SimpleNamespace(sft_sources=[str(tasks / "sft")]),
                             eval=SimpleNamespace(tasks=str(tasks / "heldout")))
    cal = {"s_star": 20, "sft_best": 20, "sft_best_temperature": "greedy"}
    args = SimpleNamespace(set=[], config="c.yaml", rehearsal=False, heldout_n=None, arms="grpo_s1",
                           retrain="grpo_s1", why="its reward rejected every tl.sum (a verifier bug)")
    main = run / "main"
    q = jobs.Queue(config, args, ["0#0"], "main", root=main)
    jobs.atomic_json(main / "holds.json", [{"hold": 3, "arms": ["grpo_s1"]}])
    for name in ("arm:grpo_s1", "unseen:grpo_s1", "heldout:grpo_s1@1.0", "heldout:grpo_s1@greedy"):
        kind, _, what = name.partition(":")
        out = main / ("arms" if kind == "arm" else kind) / what
        out.mkdir(parents=True)
        if kind == "heldout":
            (out / "results.jsonl").write_text(json.dumps({"task": "a", "result": {"correct": True}}) + "\n")
        (main / "jobs").mkdir(exist_ok=True)
        (main / "jobs" / f"{name.replace(':', '_').replace('@', '_at_')}.json").write_text(json.dumps({"job": name}))
    assert main_run.hold_arms(config, args, q, cal) == []  # finished: nothing to train without --retrain
    main_run.begin_hold(config, args, q, cal)
    gone = main / "abandoned" / "hold-3"
    assert sorted(p.name for p in gone.iterdir()) == ["arm-grpo_s1", "heldout-grpo_s1@1.0", "heldout-grpo_s1@greedy",
                                                       "unseen-grpo_s1"]
    runs = [json.loads(line) for line in (main / "heldout_runs.jsonl").read_text().splitlines()]
    assert {r["status"] for r in runs} == {"abandoned: retrained: its reward rejected every tl.sum (a verifier bug)"}
    assert main_run.hold_now(config)["retrained"] == {"grpo_s1": args.why}
    assert main_run.hold_arms(config, args, q, cal) == ["grpo_s1"]
    with pytest.raises(SystemExit):
        study2.parse_args(["--config", "c.yaml", "--phase", "main", "--retrain", "grpo_s1"])  # no --why
    with pytest.raises(SystemExit):
        study2.parse_args(["--config", "c.yaml", "--phase", "main", "--arms", "rloo", "--retrain", "grpo_s1",
                           "--why", "x"])  # not among --arms


def test_a_fresh_machine_restores_the_main_run_from_committed_archives(tmp_path):
    """The main run's state comes back from ``--carry DIR`` (the study's archives are committed: a workspace is not
    kept between sessions, and once the archives in an ignored run directory were lost with it); never over a live
    run, and a missing directory is an error, not an empty start."""
    import tarfile
    from types import SimpleNamespace

    import study2

    made = tmp_path / "made" / "main"
    made.mkdir(parents=True)
    (made / "holds.json").write_text('[{"hold": 1}]')
    carry = tmp_path / "committed"
    carry.mkdir()
    with tarfile.open(carry / "main.tar.xz", "w:xz") as tar:
        tar.add(made, arcname="main")
    config = SimpleNamespace(run=SimpleNamespace(run_dir=str(tmp_path / "run")),
                             data=SimpleNamespace(sft_sources=[str(tmp_path / "tasks" / "sft")]))
    with pytest.raises(SystemExit, match="no such directory"):
        study2.restore(config, str(tmp_path / "absent"))
    assert study2.restore(config, str(carry)) == ["main.tar.xz"]
    assert json.loads((tmp_path / "run" / "main" / "holds.json").read_text()) == [{"hold": 1}]
    (made / "holds.json").write_text('[{"hold": 2}]')
    assert study2.restore(config, str(carry)) == []  # a live run is never overwritten
    assert study2.parse_args(["--config", "c", "--carry", str(carry)]).carry == str(carry)


def test_a_two_gpu_host_gives_a_holds_first_jobs_a_gpu_each():
    """``--gpus 2``: the GPUs take turns in the slot list, so the hold's arms (its first jobs) train on different
    GPUs, and the evaluations' burst is spread over both; one GPU keeps the registered layout (``0#0`` ...)."""
    import study2
    import study2_jobs as jobs

    assert jobs.slot_names(1, 4) == ["0#0", "0#1", "0#2", "0#3"]
    two = jobs.slot_names(2, 4)
    assert two[:2] == ["0#0", "1#0"] and len(two) == 8 and len(set(two)) == 8
    spread = jobs.burst(two, 11)
    assert len(spread) >= 11 and {s.split("#")[0] for s in spread} == {"0", "1"}
    assert jobs.burst(jobs.slot_names(1, 4), 6) == [f"0#{i}" for i in range(6)]
    assert study2.parse_args(["--config", "c"]).gpus == 1
    assert study2.parse_args(["--config", "c", "--gpus", "2"]).gpus == 2


def test_each_arm_is_evaluated_as_soon_as_it_has_trained_so_a_cut_hold_keeps_it(tmp_path, monkeypatch):
    """``train_and_evaluate`` on a simulated queue (a tick a poll): the control's evaluations run beside Best-of-N
    while it still trains, so when the machine goes away before Best-of-N finishes (the third restarted hold) the
    control's are done; once every arm has trained, the evaluations left all start at once."""
    import time
    from types import SimpleNamespace

    import study2_jobs as jobs

    class MachineGone(Exception):
        pass

    class Simulated(jobs.Queue):
        durations = {"arm:control_s0": 5, "arm:bon": 30}

        def __init__(self, *a, cut_at=None):
            super().__init__(*a)
            self.tick, self.cut_at, self.starts, self.ends = 0, cut_at, {}, {}

        def start(self, name, gpu_slot, all_gpus=False):
            self.running[gpu_slot] = (None, name, self.tick)
            self.starts[name] = self.tick

        def poll(self):
            self.tick += 1
            if self.tick == self.cut_at:
                raise MachineGone
            for slot, (_, name, started) in list(self.running.items()):
                if self.tick - started >= self.durations.get(name, 3):
                    del self.running[slot]
                    self.ends[name] = self.tick
                    (self.p["jobs"] / f"{jobs.gpu.safe(name)}.json").write_text(json.dumps({"job": name}))

    monkeypatch.setattr(time, "sleep", lambda s: None)
    cal = {"s_star": 20, "sft_best": 20, "sft_best_temperature": "greedy"}
    config = SimpleNamespace(run=SimpleNamespace(run_dir=str(tmp_path / "run")),
                             data=SimpleNamespace(sft_sources=[str(tmp_path / "tasks" / "sft")]),
                             eval=SimpleNamespace(tasks=str(tmp_path / "tasks" / "heldout")))
    args = SimpleNamespace(set=[], config="c.yaml", rehearsal=False)
    control, bon = main_run.evals_of("control_s0", cal), main_run.evals_of("bon", cal)

    q = Simulated(config, args, jobs.slot_names(1, 2), "main", tmp_path / "run" / "cut", cut_at=25)
    with pytest.raises(MachineGone):
        main_run.train_and_evaluate(q, cal, ["control_s0", "bon"], ())
    assert all(q.done(e) for e in control) and not q.done("arm:bon")
    assert q.gpus == jobs.slot_names(1, 2)  # the slots as they were, whatever stopped the run

    q = Simulated(config, args, jobs.slot_names(1, 2), "main", tmp_path / "run" / "whole")
    main_run.train_and_evaluate(q, cal, ["control_s0", "bon"], ())
    assert all(q.starts[e] < q.ends["arm:bon"] for e in control)
    assert {q.starts[e] for e in bon} == {q.ends["arm:bon"]}  # every one left samples at once
    assert all(q.done(e) for e in (*control, *bon))


def test_the_result_names_each_holds_machine_and_asks_for_the_ones_not_recorded(tmp_path):
    main = tmp_path / "main"
    (main / "heldout" / "sft_star@1.0").mkdir(parents=True)
    (main / "heldout" / "sft_star@1.0" / "report.json").write_text(json.dumps({"meta": {"device": "cpu"}}))
    holds = [{"hold": 1, "arms": []}, {"hold": 2, "arms": [], "machine": "2x NVIDIA H200, 32 cores"}]
    (main / "holds.json").write_text(json.dumps(holds))
    with pytest.raises(SystemExit, match=r"holds \[1\] did not record their machine"):
        report.device_of(main)
    assert report.device_of(main, "hold 1: 1x NVIDIA H200") == \
        "hold 1: 1x NVIDIA H200; hold 2: 2x NVIDIA H200, 32 cores; verdicts on the host's CPU cores (Triton's interpreter)"
    assert f"{os.cpu_count()} cores" in main_run.machine()  # what a new hold records


def test_the_committed_result_is_recomputed_from_the_committed_counts():
    """Every registered figure of ``docs/results/study2.json``, again from ``study2_counts.json`` alone."""
    committed = json.loads((ROOT / "docs" / "results" / "study2.json").read_text())
    again = report.result(json.loads((ROOT / "docs" / "results" / "study2_counts.json").read_text()))
    for key in ("criterion_met", "hypotheses", "grpo_minus_sft", "figures", "arms", "algorithms", "unseen",
                "heldout_tasks", "headroom_val", "device"):
        assert again[key] == committed[key], key
    assert committed["criterion_met"] is False and committed["hypotheses"] == {"H1": False, "H2": False, "H3": True}
