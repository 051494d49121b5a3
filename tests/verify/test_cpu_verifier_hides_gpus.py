"""A CPU verifier's children run as on a machine without a GPU, also on a GPU host (the interpreter, no CUDA)."""

from tritonrl.verify.parent.verifier import zygote_env


def test_a_cpu_verifier_hides_every_gpu_from_its_children():
    """On an H100 host a CPU verifier's children found the real CUDA driver active: each built Triton's driver
    module and opened a CUDA context before its candidate (3.3 s a candidate). They must see no GPU."""
    assert zygote_env("cpu") == {"TRITON_INTERPRET": "1", "CUDA_VISIBLE_DEVICES": ""}
    assert zygote_env("cuda") == {"TRITON_INTERPRET": "0"}  # a GPU verifier's judges pin their own GPUs


def test_children_of_a_cpu_verifier_see_no_cuda(monkeypatch):
    """End to end: a candidate that reports what CUDA it sees, judged by a CPU verifier with a GPU id exported."""
    from tritonrl.tasks import get_task
    from tritonrl.verify import Verifier, VerifyItem

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    task = get_task("l1_relu")
    code = task.solution.replace("class ModelNew(nn.Module):", "import os\n_SEEN = os.environ.get('CUDA_VISIBLE_DEVICES')\n"
                                 "assert _SEEN == '', _SEEN\n\n\nclass ModelNew(nn.Module):", 1)
    with Verifier() as verifier:
        result = verifier.verify_many([VerifyItem(task, code=code)])[0]
    assert result.correct, result.error
