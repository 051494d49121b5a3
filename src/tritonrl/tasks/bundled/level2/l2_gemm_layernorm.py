"""Linear layer, then LayerNorm over the features, then ReLU."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Computes relu(layer_norm(linear(x)))."""

    def __init__(self, in_features, out_features, eps):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.norm = nn.LayerNorm(out_features, eps=eps)

    def forward(self, x):
        x = self.linear(x)
        x = self.norm(x)
        return torch.relu(x)


batch_size = 32
in_features = 64
out_features = 48
eps = 1e-5


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, eps]
