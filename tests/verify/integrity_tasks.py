"""Tasks for the integrity fixtures (tests/verify/fixtures/integrity/) that tests/verify/tasks.py and
redteam_tasks.py lack: a small relu (Python element loops stay fast), a bf16 relu, an fp32 and a bf16 matmul
(bf16 arithmetic and TF32 ``tl.dot``), a column sum (races and atomics across programs) and a cumulative sum
(programs that depend on each other's order). Small shapes: the CPU interpreter runs every program in Python."""

from tritonrl.tasks.model import KernelTask

RELU_SMALL = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)


batch_size = 4
dim = 256


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
'''

RELU_BF16 = RELU_SMALL.replace("torch.randn(batch_size, dim)", "torch.randn(batch_size, dim, dtype=torch.bfloat16)")

MATMUL = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.matmul(a, b)


M = 32
K = 256
N = 32


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N)]


def get_init_inputs():
    return []
'''

MATMUL_BF16 = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.matmul(a, b)


M = 32
K = 64
N = 32


def get_inputs():
    return [torch.randn(M, K, dtype=torch.bfloat16), torch.randn(K, N, dtype=torch.bfloat16)]


def get_init_inputs():
    return []
'''

COLSUM = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x.sum(dim=0)


rows = 256
cols = 64


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return []
'''

CUMSUM = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.cumsum(x, dim=0)


length = 2048


def get_inputs():
    return [torch.randn(length)]


def get_init_inputs():
    return []
'''

INTEGRITY_TASKS = {
    "relu_small": KernelTask(name="integrity_relu_small", level=1, source=RELU_SMALL),
    "relu_bf16": KernelTask(name="integrity_relu_bf16", level=1, source=RELU_BF16),
    "matmul": KernelTask(name="integrity_matmul", level=1, source=MATMUL),
    "matmul_bf16": KernelTask(name="integrity_matmul_bf16", level=1, source=MATMUL_BF16),
    "colsum": KernelTask(name="integrity_colsum", level=1, source=COLSUM),
    "cumsum": KernelTask(name="integrity_cumsum", level=1, source=CUMSUM),
}

# Round 3 (README.md, "Round 3"): a two-kernel task whose honest solutions often read a reduction into Python.
ABSMAX_SCALE = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x / x.abs().max()


batch_size = 4
dim = 256


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
'''

INTEGRITY_TASKS["absmax_scale"] = KernelTask(name="integrity_absmax_scale", level=1, source=ABSMAX_SCALE)

# Round 4 (issue 38): tasks for permissive-mode token kernels, numpy compute, copies and atomics.
_UNARY = '''
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return {expr}


batch_size = 4
dim = 256


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
'''

MATVEC = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, v):
        return torch.matmul(a, v)


M = 16
K = 200


def get_inputs():
    return [torch.randn(M, K), torch.randn(K)]


def get_init_inputs():
    return []
'''

CONV_RELU = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)

    def forward(self, x):
        return torch.relu(self.conv(x))


def get_inputs():
    return [torch.randn(2, 3, 12, 12)]


def get_init_inputs():
    return [3, 8, 3]
'''

LINEAR_RELU = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.relu(self.fc(x))


batch_size = 8
in_features = 64
out_features = 32


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
'''

INTEGRITY_TASKS.update({
    "gelu_small": KernelTask(name="integrity_gelu_small", level=1, source=_UNARY.format(expr="F.gelu(x)")),
    "amin_rows": KernelTask(name="integrity_amin_rows", level=1, source=_UNARY.format(expr="torch.amin(x, dim=1)")),
    "softmax_small": KernelTask(name="integrity_softmax_small", level=1,
                                source=_UNARY.format(expr="torch.softmax(x, dim=1)")),
    "matvec": KernelTask(name="integrity_matvec", level=1, source=MATVEC),
    # the same with v a column: a (16, 1) output, two dimensions (a copy's index map needs three elements to fit)
    "matvec_col": KernelTask(name="integrity_matvec_col", level=1,
                             source=MATVEC.replace("torch.randn(K)", "torch.randn(K, 1)")),
    "linear_relu": KernelTask(name="integrity_linear_relu", level=1, source=LINEAR_RELU),
    "conv_relu": KernelTask(name="integrity_conv_relu", level=2, source=CONV_RELU),
})

# A task whose reference keeps state torch computed in ``__init__`` (a causal mask, as minGPT's attention does).
CAUSAL_MASK = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.register_buffer("mask", torch.tril(torch.ones(n, n)))

    def forward(self, x):
        return x * self.mask


n = 32


def get_inputs():
    return [torch.randn(n, n)]


def get_init_inputs():
    return [n]
'''

INTEGRITY_TASKS["causal_mask"] = KernelTask(name="integrity_causal_mask", level=1, source=CAUSAL_MASK)

# Issue 51 (round 12): bundled tasks as they are, for fixtures made from their reference solutions (real bugs, class 7;
# precision through a reduction, class 6).
def _bundled(name: str) -> KernelTask:
    from tritonrl.tasks import load_tasks

    return next(t for t in load_tasks("bundled") if t.name == name)


for _name in ("l1_softmax", "l1_sum_dim", "l2_add_relu_mul_residual", "l2_gemm_sigmoid_sum", "l1_transpose",
              "l1_layernorm", "l1_gelu", "l1_relu", "l1_hardtanh", "l1_max_dim", "l1_matmul", "l1_matvec",
              "l2_gemm_bias_relu", "l2_gemm_tanh_clamp", "l1_leaky_relu", "l1_mean_dim", "l1_sigmoid"):
    INTEGRITY_TASKS[_name] = _bundled(_name)

# The nineteenth red team's honest atomic-max reduction, on a small max over the last dimension (the bundled
# l1_max_dim's size makes its per-element atomics too slow for the CPU's timed path in this suite).
SMALL_MAX_DIM = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.max(x, dim=2)[0]


def get_inputs():
    return [torch.randn(2, 6, 300)]


def get_init_inputs():
    return []
'''

INTEGRITY_TASKS["small_max_dim"] = KernelTask(name="integrity_small_max_dim", level=1, source=SMALL_MAX_DIM)
