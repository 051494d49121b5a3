"""LeakyReLU activation with a configurable negative slope."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Applies LeakyReLU elementwise: x if x >= 0 else negative_slope * x."""

    def __init__(self, negative_slope):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x):
        return torch.nn.functional.leaky_relu(x, negative_slope=self.negative_slope)


batch_size = 16
dim = 1000
negative_slope = 0.05


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [negative_slope]
