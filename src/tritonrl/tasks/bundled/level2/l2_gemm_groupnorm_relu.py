"""Linear layer, then GroupNorm over groups of features, then ReLU."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Computes relu(group_norm(linear(x)))."""

    def __init__(self, in_features, out_features, num_groups):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.group_norm = nn.GroupNorm(num_groups, out_features)

    def forward(self, x):
        x = self.linear(x)
        x = self.group_norm(x)
        return torch.relu(x)


batch_size = 32
in_features = 64
out_features = 48
num_groups = 4


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, num_groups]
