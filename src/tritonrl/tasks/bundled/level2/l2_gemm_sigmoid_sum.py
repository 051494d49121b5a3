"""Linear layer, then sigmoid, then a sum over the feature dimension."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Computes sigmoid(linear(x)).sum(dim=1, keepdim=True)."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        x = self.linear(x)
        x = torch.sigmoid(x)
        return torch.sum(x, dim=1, keepdim=True)


batch_size = 32
in_features = 64
out_features = 48


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
