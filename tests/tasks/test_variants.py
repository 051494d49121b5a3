"""Shape variants: tiny runs fast and keeps structure; alternatives differ, run, and avoid powers of two."""

import os
import time
from pathlib import Path

import pytest

from tests.verify.tasks import RELU
from tritonrl.errors import TaskError
from tritonrl.tasks import KernelTask, load_tasks
from tritonrl.tasks.variants import (
    TaskCost,
    alt_variants,
    find_constants,
    reduced_variant,
    run_source,
    task_cost,
    tiny_variant,
)

KB_FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "kernelbench"
FIXTURE_TASKS = load_tasks(KB_FIXTURE)
STRUCTURAL = ("kernel_size", "stride", "padding", "reduce_dim", "pool_kernel_size", "dilation", "output_padding",
              "scan_dim", "pool_window")


@pytest.mark.parametrize("task", FIXTURE_TASKS, ids=[t.name for t in FIXTURE_TASKS])
def test_tiny_variant_runs_fast_and_keeps_structure(task):
    tiny = tiny_variant(task)
    assert tiny.variant == "tiny" and tiny.source != task.source and tiny.name == task.name
    result = run_source(tiny.source)
    assert result.ok, result.error
    assert result.seconds < 0.5
    changed = tiny.meta["changes"]
    assert not set(changed) & set(STRUCTURAL)
    for name, (old, new) in changed.items():
        assert all(n <= o for n, o in zip(_as_tuple(new), _as_tuple(old))) and new != old, name
    # divisibility survives: channels stay multiples of the (possibly shrunk) group / head count
    values = {c.name: c.value for c in find_constants(tiny.source)}
    for divisor in ("groups", "num_groups", "num_heads"):
        for size in ("in_channels", "out_channels", "features", "embed_dim"):
            if divisor in values and size in values and values[size] > 4:
                assert values[size] % values[divisor] == 0, (size, divisor)


def _as_tuple(value):
    return value if isinstance(value, tuple) else (value,)


def _fixture(name):
    return next(t for t in FIXTURE_TASKS if t.name == name)


def _tiny_values(name):
    tiny = tiny_variant(_fixture(name))
    assert run_source(tiny.source).ok
    return {c.name: c.value for c in find_constants(tiny.source)}


def test_tiny_keeps_sizes_equal_across_kinds():
    # the per-sample weights (batch_size,) broadcast against rows of length sample_shape[0]: both must move together
    values = _tiny_values("9_Weighted_row_loss")
    assert values["batch_size"] == values["sample_shape"][0] < 2048


def test_tiny_keeps_grouping_dilation_and_output_padding():
    conv3d = _tiny_values("5_Conv3d_grouped_dilated_asymmetric")
    assert conv3d["groups"] > 1 and conv3d["in_channels"] % conv3d["groups"] == conv3d["out_channels"] % conv3d["groups"] == 0
    assert conv3d["dilation"] == (2, 3, 1) and conv3d["kernel_size"] == (2, 3, 5)
    deconv = _tiny_values("6_ConvTranspose2d_output_padding")
    assert deconv["groups"] == 5  # prime: kept rather than collapsed to 1
    assert deconv["output_padding"] == 2 < deconv["stride"]


def test_tiny_keeps_a_window_that_needs_room():
    # a 24-wide pooling window over the features: the tiny feature size must stay >= 24
    values = _tiny_values("5_Gemm_AvgPool1d_wide_window_Max")
    assert values["pool_window"] == 24 <= values["out_features"] < 3072


def test_tiny_never_runs_a_large_original():
    # forward refuses every shrunk shape; the original inputs (64 x 8192 x 4096 floats) must not be allocated
    source = ("import torch\nimport torch.nn as nn\nclass Model(nn.Module):\n    def forward(self, x):\n"
              "        assert x.shape[-1] >= 4096\n        return x.sum()\nbatch_size = 64\nseq_len = 8192\n"
              "hidden = 4096\ndef get_inputs():\n    return [torch.randn(batch_size, seq_len, hidden)]\n"
              "def get_init_inputs():\n    return []\n")
    start = time.perf_counter()
    with pytest.raises(TaskError, match="no tiny variant runs"):
        tiny_variant(KernelTask(name="huge_only", level=1, source=source))
    assert time.perf_counter() - start < 30


def test_tiny_keeps_text_outside_constants():
    task = next(t for t in FIXTURE_TASKS if t.name == "1_Conv2d_grouped_strided")
    tiny = tiny_variant(task)
    original, shrunk = task.source.splitlines(), tiny.source.splitlines()
    assert len(original) == len(shrunk)
    differing = [a for a, b in zip(original, shrunk) if a != b]
    assert differing and all(" = " in line and line.split(" = ")[0].replace(" ", "").replace("=", "")
                             for line in differing)
    assert "def forward(self, x):\n        return self.conv(x)" in tiny.source


@pytest.mark.parametrize("task", FIXTURE_TASKS[:4], ids=[t.name for t in FIXTURE_TASKS[:4]])
def test_alt_variants_differ_run_and_stay_near_the_task(task):
    alts = alt_variants(task, n=2, seed=0)
    assert [a.variant for a in alts] == ["alt1", "alt2"]
    assert len({a.source for a in alts} | {task.source}) == 3
    for alt in alts:
        assert run_source(alt.source, meta=True).ok
        for old, new in alt.meta["changes"].values():
            assert 0.5 <= (sum(new) if isinstance(new, tuple) else new) / (sum(old) if isinstance(old, tuple) else old) <= 1.6
    assert alt_variants(task, n=2, seed=0) == alts  # cached and deterministic


def test_the_second_alternative_is_every_size_a_power_of_two_where_one_is_not():
    """alt1 at 2^j + 1 (a last block of one element), alt2 at 2^j (every block full); a task whose sizes are
    powers of two already gets nearby sizes that are not (up to 25% away)."""
    sums = next(t for t in FIXTURE_TASKS if t.name == "2_Sum_over_dim")  # dim2 = 768
    edge, power = alt_variants(sums, n=2, seed=0)
    assert edge.meta["changes"]["dim2"] == (768, 513) and power.meta["changes"] == {"dim2": (768, 512)}
    square = KernelTask(name="pow2_relu", level=1, source=RELU)  # 16 x 1024
    nearby = alt_variants(square, n=2, seed=0)[1]
    for name, (old, new) in nearby.meta["changes"].items():
        assert new & (new - 1) != 0 and 0.75 <= new / old <= 1.25, (name, old, new)


def test_unrunnable_task_has_no_tiny_variant():
    source = ("import torch\nimport torch.nn as nn\nclass Model(nn.Module):\n    def forward(self, x):\n"
              "        raise RuntimeError('never runs')\nsize = 64\n"
              "def get_inputs():\n    return [torch.randn(size)]\ndef get_init_inputs():\n    return []\n")
    with pytest.raises(TaskError, match="no tiny variant runs"):
        tiny_variant(KernelTask(name="broken", level=1, source=source))
    assert alt_variants(KernelTask(name="broken", level=1, source=source)) == []


def test_cuda_device_in_inputs_runs_on_cpu():
    source = ("import torch\nimport torch.nn as nn\nclass Model(nn.Module):\n    def forward(self, x):\n"
              "        return x * 2\nbatch_size = 64\ndim = 300\n"
              "def get_inputs():\n    return [torch.rand(batch_size, dim, device='cuda')]\n"
              "def get_init_inputs():\n    return []\n")
    tiny = tiny_variant(KernelTask(name="cuda_inputs", level=1, source=source))
    assert tiny.meta["changes"] == {"batch_size": (64, 2), "dim": (300, 8)}


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("KERNELBENCH_DIR"), reason="set KERNELBENCH_DIR to a KernelBench clone")
def test_real_kernelbench_tiny_variants():
    tasks = [t for level in (1, 2) for t in load_tasks(os.environ["KERNELBENCH_DIR"], level=level)]
    failures = []
    for task in tasks:
        try:
            result = run_source(tiny_variant(task).source)
            if not result.ok or result.seconds > 1.0:
                failures.append((task.name, result.error or f"{result.seconds:.2f}s"))
        except TaskError as exc:
            failures.append((task.name, str(exc)))
    assert not failures, failures


def test_task_cost_counts_largest_tensor_and_matmul_flops_on_meta():
    source = ("import torch\nimport torch.nn as nn\nclass Model(nn.Module):\n    def __init__(self, k, n):\n"
              "        super().__init__()\n        self.linear = nn.Linear(k, n)\n    def forward(self, x):\n"
              "        return torch.relu(self.linear(x))\nbatch_size = 1024\nin_features = 8192\n"
              "out_features = 4096\ndef get_inputs():\n    return [torch.rand(batch_size, in_features)]\n"
              "def get_init_inputs():\n    return [in_features, out_features]\n")
    cost = task_cost(source)
    assert cost == TaskCost(max_numel=8192 * 4096, flops=2 * 1024 * 8192 * 4096, output_numel=1024 * 4096)
    small = reduced_variant(KernelTask("gemm", 2, source), lambda s: task_cost(s).flops <= 1 << 26)
    assert small.variant == "reduced"
    assert small.meta["changes"] == {"batch_size": (1024, 64), "in_features": (8192, 512), "out_features": (4096, 256)}
    assert reduced_variant(KernelTask("gemm", 2, source), lambda s: False) is None


CONV_TWO_POOLS = """import torch
import torch.nn as nn
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv3d(3, 16, 3)
        self.pool = nn.MaxPool3d(2)
    def forward(self, x):
        return self.pool(self.pool(torch.softmax(self.conv(x), dim=1)))
batch_size = 128
depth, height, width = 16, 32, 32
def get_inputs():
    return [torch.rand(batch_size, 3, depth, height, width)]
def get_init_inputs():
    return []
"""


def test_reduced_variant_shrinks_the_batch_alone_when_spatial_sizes_cannot_shrink():
    # a conv then two poolings: depth 4 would pool to nothing, so only the batch can give
    small = reduced_variant(KernelTask("conv", 2, CONV_TWO_POOLS),
                            lambda s: (c := task_cost(s)).max_numel <= 1 << 18 and c.flops <= 1 << 26)
    assert small.meta["changes"] == {"batch_size": (128, 1)}
    assert run_source(small.source).ok


# ---------------------------------------------------------------- Level-3 depth: layer widths and counts (issue 53)
DEEP_MLP = """import torch
import torch.nn as nn
class Model(nn.Module):
    def __init__(self, input_size, hidden_layer_sizes, output_size):
        super().__init__()
        layers, current = [], input_size
        for hidden in hidden_layer_sizes:
            layers += [nn.Linear(current, hidden), nn.ReLU()]
            current = hidden
        layers.append(nn.Linear(current, output_size))
        self.network = nn.Sequential(*layers)
    def forward(self, x):
        return self.network(x)
batch_size = 256
input_size = 2048
hidden_layer_sizes = [512] * 12  # deep and narrow, as KernelBench's 3_DeepNarrowMLP
output_size = 2048
def get_inputs():
    return [torch.rand(batch_size, input_size)]
def get_init_inputs():
    return [input_size, hidden_layer_sizes, output_size]
"""


def test_a_list_of_layer_widths_from_the_init_inputs_shrinks_in_width_and_depth():
    kinds = {c.name: (c.value, c.kind) for c in find_constants(DEEP_MLP)}
    assert kinds["hidden_layer_sizes"] == ((512,) * 12, "layers") and kinds["output_size"][1] == "feature"
    tiny = tiny_variant(KernelTask("deep_mlp", 3, DEEP_MLP))
    assert tiny.meta["changes"] == {"batch_size": (256, 2), "input_size": (2048, 9),
                                    "hidden_layer_sizes": ((512,) * 12, (8, 8)), "output_size": (2048, 9)}
    assert "hidden_layer_sizes = [8] * 2  # deep and narrow" in tiny.source  # written as it was, comment kept
    assert run_source(tiny.source).ok
    # the CPU's full trials: every width divided by one factor, the depth as written
    small = reduced_variant(KernelTask("deep_mlp", 3, DEEP_MLP),
                            lambda s: (c := task_cost(s)).max_numel <= 1 << 18 and c.flops <= 1 << 26)
    assert small.meta["changes"] == {"batch_size": (256, 64), "input_size": (2048, 512),
                                     "hidden_layer_sizes": ((512,) * 12, (128,) * 12), "output_size": (2048, 512)}
    assert "hidden_layer_sizes = [128] * 12" in small.source and run_source(small.source).ok


def test_only_depth_the_model_is_handed_shrinks():
    # a layer count from the init inputs goes to 2; a block-count list (ResNet's ``layers``), a list the model is
    # not handed, and kernel sizes stay as written
    source = DEEP_MLP.replace("return [input_size, hidden_layer_sizes, output_size]",
                              "return [input_size, [512] * 12, output_size]")
    assert {c.name: c.kind for c in find_constants(source)}["hidden_layer_sizes"] == "fixed"
    stack = ("import torch\nimport torch.nn as nn\nclass Model(nn.Module):\n"
             "    def __init__(self, hidden_size, num_layers):\n        super().__init__()\n"
             "        self.layers = nn.ModuleList(nn.Linear(hidden_size, hidden_size) for _ in range(num_layers))\n"
             "    def forward(self, x):\n        for layer in self.layers:\n            x = torch.tanh(layer(x))\n"
             "        return x\n"
             "batch_size = 10\nhidden_size = 256\nnum_layers = 6\nkernel_size = 7\nlayers = [3, 4, 23, 3]\n"
             "def get_inputs():\n    return [torch.rand(batch_size, hidden_size)]\n"
             "def get_init_inputs():\n    return [hidden_size, num_layers]\n")
    kinds = {c.name: c.kind for c in find_constants(stack)}
    assert (kinds["num_layers"], kinds["kernel_size"], kinds["layers"]) == ("count", "fixed", "fixed")
    changes = tiny_variant(KernelTask("stack", 3, stack)).meta["changes"]
    assert changes == {"batch_size": (10, 2), "hidden_size": (256, 8), "num_layers": (6, 2)}
    # on a GPU sizes that 16 divided stay so (one compilation); a layer count is no size: 16 layers still go to 2
    gpu = tiny_variant(KernelTask("stack16", 3, stack.replace("num_layers = 6", "num_layers = 16")),
                       same_divisibility=True).meta["changes"]
    assert gpu["num_layers"] == (16, 2) and gpu["hidden_size"] == (256, 16)
    # a model whose depth cannot change keeps it: the shallow candidates fail to run, the deep ones are tried
    fixed_depth = stack.replace("        super().__init__()\n", "        super().__init__()\n"
                                "        assert num_layers == 6\n")
    assert "num_layers" not in tiny_variant(KernelTask("stack6", 3, fixed_depth)).meta["changes"]


def test_describe_changes_writes_a_repeated_list_short():
    from tritonrl.tasks.variants import describe_changes

    assert describe_changes({"batch_size": (1024, 2), "hidden": ((1024,) * 16, (8, 8))}) == \
        "batch_size 1024 -> 2, hidden [1024] * 16 -> [8, 8]"


def test_the_wide_variant_has_three_rows_and_features_at_the_real_scale_else_four_times_plus_one():
    from tritonrl.tasks import get_task
    from tritonrl.tasks.variants import timing_variant, wide_variant

    layernorm = get_task("l1_layernorm")  # 8 x 32 x 384 here, hidden 4096 at its timing shape: within twice the cost
    wide = wide_variant(layernorm, timing_variant(layernorm))
    assert wide.variant == "wide" and wide.meta["changes"] == {
        "batch_size": (8, 3), "seq_len": (32, 8), "hidden": (384, 4096)}
    assert run_source(wide.source, meta=True).ok
    sum_dim = get_task("l1_sum_dim")  # 1024 x 1000 at its timing shape: over twice the cost, and so is 4x + 1
    assert wide_variant(sum_dim, timing_variant(sum_dim)).meta["changes"] == {
        "batch_size": (8, 3), "dim1": (256, 513), "dim2": (200, 401)}
    mean = get_task("l1_mean_dim")  # dim 1500 here, 4000 at its timing shape: capped there
    assert wide_variant(mean, timing_variant(mean)).meta["changes"]["dim"] == (1500, 4000)
    assert wide_variant(mean) is None  # no ceiling: the task as written is its own scale, no wider


def test_a_gemm_whose_sizes_cannot_widen_together_gets_a_deep_variant_along_k():
    """Every size of a GEMM is a feature, and 4x would be 64x the FLOPs: the deep variant takes the one size the
    output does not follow (K) past any tile a GPU holds (1040; the real scale if smaller) and the others to 16; M
    or N there would grow the output."""
    from tritonrl.tasks import get_task
    from tritonrl.tasks.variants import timing_variant, wide_variant

    matmul = get_task("l1_matmul")  # 120 x 200 x 136 here; 2048 x 4096 x 4096 at its timing shape
    deep = wide_variant(matmul, timing_variant(matmul))
    assert deep.meta["changes"] == {"m": (120, 16), "k": (200, 1040), "n": (136, 16)}
    assert run_source(deep.source, meta=True).ok
    assert wide_variant(matmul) is None  # no ceiling: the task as written is its own scale, no deeper
