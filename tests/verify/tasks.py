"""Small tasks written for the verifier's tests (fast under Triton's interpreter), as ``KernelTask``s."""

from tritonrl.tasks.model import KernelTask

RELU = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)


batch_size = 16
dim = 1024


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
'''

LAYERNORM = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.ln = nn.LayerNorm(hidden)

    def forward(self, x):
        return self.ln(x)


batch_size = 8
hidden = 256


def get_inputs():
    return [torch.randn(batch_size, hidden) * 2 + 0.5]


def get_init_inputs():
    return [hidden]
'''

# Rows of 50000: every probability is ~2e-5, below atol=1e-4, so all-zeros would pass a plain allclose.
WIDE_SOFTMAX = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.softmax(x, dim=1)


batch_size = 4
dim = 50000


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
'''

TASKS = {
    "relu": KernelTask(name="test_relu", level=1, source=RELU),
    "layernorm": KernelTask(name="test_layernorm", level=1, source=LAYERNORM),
    "wide_softmax": KernelTask(name="test_wide_softmax", level=1, source=WIDE_SOFTMAX),
    # The ReLU at a size a GPU timer resolves (16M values, tens of microseconds): at 16 x 1024 it runs for a few
    # microseconds, and either side's median can come out 0 once the timer's own cost is taken off.
    "relu_timed": KernelTask(name="test_relu_timed", level=1,
                             source=RELU.replace("batch_size = 16\n", "batch_size = 16384\n")),
}
