"""Linear layer, then Mish, then addition of a constant."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Computes mish(linear(x)) + add_value."""

    def __init__(self, in_features, out_features, add_value):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.add_value = add_value

    def forward(self, x):
        x = self.linear(x)
        x = torch.nn.functional.mish(x)
        return x + self.add_value


batch_size = 28
in_features = 60
out_features = 36
add_value = 0.3


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, add_value]
