"""Several processes: only the main one writes, a stop is decided together, Best-of-N shards merge, each rank's
verifier times on its own GPU under a cross-process lock.

The multi-process tests launch ``tests/train/dist_worker.py`` on 2 CPU ranks (gloo) through torchrun, the
launcher ``accelerate launch`` itself uses (accelerate's own CPU multi-process path needs mpirun):
SFT, GRPO with a SIGTERM to rank 1 only, and a Best-of-N round: one launch for the three tests, 16 s on 2 idle
cores, 26 s on busy ones; a second launch (``late-stop``) SIGTERMs rank 1 after each stage's last step. They stay
in the default run because a rank-logic regression shows up as a hang (each launch's 240 s timeout, after which
the launcher and both ranks are killed as one process group), which nothing else would catch. The rest run
in-process in a few seconds.
"""

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tritonrl.common import ranks
from tritonrl.common.manifest import RunManifest
from tritonrl.train.best_of_n import ScoredSample, merge_shards
from tritonrl.train.checkpoints import MARKER

WORKER = Path(__file__).with_name("dist_worker.py")
SRC = Path(__file__).resolve().parents[2] / "src"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch_two_ranks(out: Path, tiny_model_dir, *mode: str, timeout_s: float = 240) -> None:
    """Run the worker on 2 ranks; fail on a non-zero exit or, past ``timeout_s``, a hang. On a timeout the
    launcher and both ranks (each in a session of its own, torchrun's doing; found by the pid files they write)
    are killed, so no hung rank outlives the test. Output goes to ``launch.log``, not a pipe a rank could hold."""
    template = out / "template.txt"
    template.write_text("Write ModelNew with Triton for:\n{task_source}\n")
    env = {**os.environ, "PYTHONPATH": f"{SRC}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
           "ACCELERATE_USE_CPU": "true", "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2",
           "--master_addr", "127.0.0.1", "--master_port", str(_free_port()),
           str(WORKER), str(out), str(tiny_model_dir), str(template), *mode]
    log = out / "launch.log"
    with open(log, "w") as fh:
        proc = subprocess.Popen(cmd, env=env, stdout=fh, stderr=subprocess.STDOUT)
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        for pid in [proc.pid] + [int(p.read_text()) for p in out.glob("worker-*.pid")]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        proc.wait()
        pytest.fail(f"the two ranks hung (killed after {timeout_s} s): {log.read_text()[-3000:]}")
    assert proc.returncode == 0, log.read_text()[-3000:]


@pytest.fixture(scope="module")
def two_ranks(tmp_path_factory, tiny_model_dir):
    """Run the worker on 2 ranks once; the per-rank reports and the output directory."""
    out = tmp_path_factory.mktemp("ranks")
    # Without an agreed stop, rank 0 would wait forever in the step rank 1 never joins: the timeout is the test.
    launch_two_ranks(out, tiny_model_dir)
    reports = [json.loads((out / f"rank-{r}.json").read_text()) for r in (0, 1)]
    return out, reports


def test_only_the_main_process_writes_the_run_directory(two_ranks):
    out, reports = two_ranks
    assert [r["results"]["world_size"] for r in reports] == [2, 2]
    rank1 = [p for p in reports[1]["writes"] if p != "rank-1.json"]
    # rank 1 writes only its own RNG state (the Trainer's, per rank) and its own Best-of-N shard (and the judged
    # calls of it, saved as they come)
    allowed = ("rng_state_1.pth", "samples.rank-1-of-2.jsonl", "samples.rank-1-of-2.partial.jsonl")
    assert rank1 and all(any(a in Path(p).name for a in allowed) for p in rank1), rank1
    rank0 = reports[0]["writes"]
    for expected in ("sft/manifest.json", "sft/sft/final/adapter_model.safetensors", "sft/sft/metrics.json",
                     "grpo/grpo/checkpoints/checkpoint-1/COMPLETE",
                     "bon/best_of_n/round-0/model/model.safetensors", "bon/best_of_n/round-0/samples.jsonl"):
        assert expected in rank0
    assert RunManifest(out / "sft").output("sft", "model") == str(out / "sft" / "sft" / "final")


def test_a_stop_asked_by_rank_1_stops_both_ranks_at_the_same_step(two_ranks):
    out, reports = two_ranks
    assert [r["results"]["grpo"] for r in reports] == [{"status": "interrupted", "step": 1}] * 2
    checkpoint = out / "grpo" / "grpo" / "checkpoints" / "checkpoint-1"
    assert (checkpoint / MARKER).exists()
    assert {p.name for p in checkpoint.glob("rng_state_*.pth")} == {"rng_state_0.pth", "rng_state_1.pth"}
    entry = RunManifest(out / "grpo").stage("grpo")
    assert entry["status"] == "interrupted" and entry["reason"] == "SIGTERM (rank 1)"


def test_best_of_n_shards_are_merged_in_task_order(two_ranks):
    out, reports = two_ranks
    round_dir = out / "bon" / "best_of_n" / "round-0"
    shards = [[json.loads(line) for line in (round_dir / f"samples.rank-{r}-of-2.jsonl").read_text().splitlines()]
              for r in (0, 1)]
    merged = [json.loads(line) for line in (round_dir / "samples.jsonl").read_text().splitlines()]
    assert [len(s) for s in shards] == [2, 2]  # one task each, best_of_n.n = 2 samples
    assert {s["task_key"] for s in shards[0]}.isdisjoint({s["task_key"] for s in shards[1]})
    assert merged == shards[0] + shards[1]  # rank r has tasks r, r + 2, ...: here task order is rank order
    assert [r["results"]["bon"]["status"] for r in reports] == ["done", "done"]
    assert (round_dir / "model" / "model.safetensors").exists()


def test_a_sigterm_after_the_last_step_stops_both_ranks_alike(tmp_path, tiny_model_dir):
    """Rank 1 is SIGTERMed once its training loop is over, past the last step's agreement. Both ranks must then
    give the same answer: each used to read its own flag, so rank 1 skipped ``final/`` (or its round model)
    while rank 0 waited for it in a collective. Both stop: the stage is interrupted on both, and nothing is
    lost, since the last step's checkpoint is complete and ``--resume`` writes ``final/`` from it."""
    launch_two_ranks(tmp_path, tiny_model_dir, "late-stop")
    reports = [json.loads((tmp_path / f"late-rank-{r}.json").read_text()) for r in (0, 1)]
    assert reports[0] == reports[1]
    checkpoints = {"sft": "sft/checkpoints", "grpo": "grpo/checkpoints", "best_of_n": "best_of_n/round-0/checkpoints"}
    for name, stage in (("sft", "sft"), ("grpo", "grpo"), ("bon", "best_of_n")):
        assert reports[0][name] == {"status": "interrupted", "step": 1, "model": None}, name
        run_dir = tmp_path / f"late-{name}"
        entry = RunManifest(run_dir).stage(stage)
        assert entry["status"] == "interrupted" and entry["reason"] == "SIGTERM (rank 1)", entry
        assert "model" not in entry["outputs"] and not (run_dir / stage / "final").exists()
        assert (run_dir / checkpoints[stage] / "checkpoint-1" / MARKER).exists()


# ---------------------------------------------------------------- in-process pieces
def test_shards_are_disjoint_and_merge_back_in_task_order():
    class Task:
        def __init__(self, key):
            self.key = key

    tasks = [Task(f"t{i}") for i in range(5)]
    samples = [ScoredSample(t.key, [], f"{t.key}-{j}") for t in tasks for j in range(2)]
    shards = [[s for s in samples if s.task_key in {t.key for t in ranks.shard(tasks, r, 3)}] for r in range(3)]
    assert sorted(len(ranks.shard(tasks, r, 3)) for r in range(3)) == [1, 2, 2]
    assert merge_shards(shards, tasks) == samples


def test_stop_agreement_on_one_process():
    from tritonrl.common.signals import StopRequest, agree

    request = StopRequest()
    assert agree(request) is False
    request.set("SIGTERM")
    assert agree(request) is True and request.reason == "SIGTERM"


def test_rank_gpu_and_verify_config(monkeypatch):
    from tritonrl.config import VerifyConfig

    class State:
        local_process_index = 1
        num_processes = 2

    monkeypatch.setattr(ranks, "_state", State)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,5")
    assert ranks.rank_gpu() == "5"  # local rank 1's GPU of this process's list, not physical GPU 1
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    assert ranks.rank_gpu() == "1"
    monkeypatch.setattr("tritonrl.verify.parent.verifier.resolve_device", lambda device: "cuda")
    assert ranks.rank_verify_config(VerifyConfig(device="cuda", workers=8)).workers == 1
    assert ranks.rank_verify_config(VerifyConfig(backend="ray")).workers == 0  # Ray has its own GPUs


def test_rank_gpu_with_one_visible_gpu_per_process(monkeypatch):
    """A scheduler that gives each process its own GPU (``CUDA_VISIBLE_DEVICES=3`` for local rank 1): the rank
    trains on that device (accelerate's ``cuda:0``), so its verifier must time there, not on physical GPU 1."""
    class State:
        local_process_index = 1
        num_processes = 2

    monkeypatch.setattr(ranks, "_state", State)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3")
    assert ranks.rank_gpu() == "3"
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-5f2c")  # a UUID is an entry like any other
    assert ranks.rank_gpu() == "GPU-5f2c"


def test_sharded_launch_is_read_from_accelerate_env(monkeypatch):
    for name in ("ACCELERATE_USE_FSDP", "ACCELERATE_USE_DEEPSPEED", "ACCELERATE_DEEPSPEED_ZERO_STAGE"):
        monkeypatch.delenv(name, raising=False)
    assert ranks.sharded_launch() is None
    monkeypatch.setenv("ACCELERATE_USE_DEEPSPEED", "true")
    monkeypatch.setenv("ACCELERATE_DEEPSPEED_ZERO_STAGE", "2")
    assert ranks.sharded_launch() is None
    monkeypatch.setenv("ACCELERATE_DEEPSPEED_ZERO_STAGE", "3")
    assert ranks.sharded_launch() == "zero3"
    monkeypatch.setenv("ACCELERATE_USE_FSDP", "true")
    assert ranks.sharded_launch() == "fsdp"


def test_merge_from_a_gathered_state_dict_equals_merging_in_place(tiny_model_dir):
    """The ZeRO-3/FSDP path: a whole state dict merged into a CPU copy gives the in-place merge's weights."""
    import copy

    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from tritonrl.common.llm import merged_from_state_dict

    model = get_peft_model(AutoModelForCausalLM.from_pretrained(tiny_model_dir),
                           LoraConfig(r=4, lora_alpha=8, target_modules="all-linear", task_type="CAUSAL_LM"))
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.normal_()
    merged = merged_from_state_dict(model, {k: v.clone() for k, v in model.state_dict().items()})
    expected = copy.deepcopy(model).merge_and_unload()
    got, want = merged.state_dict(), expected.state_dict()
    assert got.keys() == want.keys()
    assert all(torch.equal(got[k], want[k]) for k in want)
    # A gathered state dict holds the tied embedding twice, as two tensors (the 1.5B FSDP rehearsal's final/ had
    # an untied 233M-parameter lm_head): the copy is tied again, as the in-place merge is.
    assert merged.config.tie_word_embeddings is True
    assert merged.get_output_embeddings().weight is merged.get_input_embeddings().weight


def test_a_gathered_state_dict_whose_head_was_trained_stays_untied(tiny_model_dir):
    """Tying again is for two equal copies of one tensor; an output layer that differs keeps its own weights."""
    import torch
    from transformers import AutoModelForCausalLM

    from tritonrl.common.llm import merged_from_state_dict

    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    state = {k: v.clone() for k, v in model.state_dict().items()}
    state["lm_head.weight"] = state["lm_head.weight"] + 1.0
    merged = merged_from_state_dict(model, state)
    assert torch.equal(merged.get_output_embeddings().weight, state["lm_head.weight"])
    assert merged.config.tie_word_embeddings is False


def test_a_final_directory_without_weights_is_refused(tmp_path):
    from tritonrl.errors import ConfigError
    from tritonrl.train.stage_session import check_weights

    (tmp_path / "pytorch_model_fsdp_0").mkdir()  # what a sharded FSDP state dict leaves
    with pytest.raises(ConfigError, match="no loadable weights"):
        check_weights(tmp_path)
    (tmp_path / "model.safetensors").write_bytes(b"")
    check_weights(tmp_path)


def test_gpu_timing_lock_is_exclusive_across_processes(tmp_path):
    from tritonrl.verify.judge.gpu_lock import CrossProcessGpuLease, GpuFileLock, RWLock

    probe = ("import fcntl, os, sys; fd = os.open(sys.argv[1], os.O_RDWR)\n"
             "try: fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB); print('got')\n"
             "except BlockingIOError: print('busy')")

    def other_process_can_lock(path: str) -> bool:
        return subprocess.run([sys.executable, "-c", probe, path], capture_output=True, text=True,
                              timeout=30).stdout.strip() == "got"

    file_lock = GpuFileLock("3", str(tmp_path))
    path = file_lock.path
    lease = CrossProcessGpuLease("3", RWLock(), file_lock)
    lease.share()
    with lease.exclusive():
        assert not other_process_can_lock(path)  # timing: no other process may time on GPU 3
    lease.share()
    assert other_process_can_lock(path)  # shared again (compile, check): other processes may time
    lease.release()
    with GpuFileLock("3", str(tmp_path)).hold():  # another Verifier of this process holds the GPU ...
        assert not other_process_can_lock(path)


def test_shutdown_destroys_the_process_group_and_is_a_no_op_without_one(tmp_path):
    """The command's last act: a run's process group is destroyed before the interpreter's teardown (left to it, a
    rank whose work was done aborted once in CI). Without a group it does nothing, and it never needs torch."""
    import torch.distributed as dist

    ranks.shutdown()  # no group: nothing to do
    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1)
    try:
        ranks.shutdown()
        assert not dist.is_initialized()
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()
    code = "import sys; from tritonrl.common import ranks; ranks.shutdown(); print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": str(SRC)},
                         capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
