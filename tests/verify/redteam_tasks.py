"""Extra tasks for the red-team fixtures (tests/verify/fixtures/redteam/), where tests/verify/tasks.TASKS has none
that fits: layout-only tasks (a view of the input is the right answer), a small linear layer (a weight to
transpose), and broken tasks (a reference that raises, a task that does not parse) for batch robustness."""

from tritonrl.tasks.model import KernelTask

TRANSPOSE = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x.t().contiguous()


rows = 48
cols = 80


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return []
'''

COPY = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x.clone()


batch_size = 16
dim = 256


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
'''

BROADCAST = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, copies):
        super().__init__()
        self.copies = copies

    def forward(self, x):
        return x.unsqueeze(0).repeat(self.copies, 1, 1)


copies = 3
batch_size = 8
dim = 64


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [copies]
'''

LINEAR = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)

    def forward(self, x):
        return self.fc(x)


batch_size = 8
in_features = 64
out_features = 32


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
'''

BROKEN_REFERENCE = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        if x.shape[0] >= 0:
            raise RuntimeError("this reference always fails")
        return x


batch_size = 16
dim = 1024


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
'''

BAD_INPUTS = '''
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
    return [torch.randn(batch_size, dim) for _ in range(batch_size // 0)]


def get_init_inputs():
    return []
'''

REDTEAM_TASKS = {
    "transpose": KernelTask(name="redteam_transpose", level=1, source=TRANSPOSE),
    "copy": KernelTask(name="redteam_copy", level=1, source=COPY),
    "broadcast": KernelTask(name="redteam_broadcast", level=1, source=BROADCAST),
    "linear": KernelTask(name="redteam_linear", level=1, source=LINEAR),
    "broken_reference": KernelTask(name="redteam_broken_reference", level=1, source=BROKEN_REFERENCE),
    "bad_inputs": KernelTask(name="redteam_bad_inputs", level=1, source=BAD_INPUTS),
}
