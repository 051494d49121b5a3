"""2D convolution, then GroupNorm over groups of channels, then ReLU."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Computes relu(group_norm(conv2d(x)))."""

    def __init__(self, in_channels, out_channels, kernel_size, num_groups):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.group_norm = nn.GroupNorm(num_groups, out_channels)

    def forward(self, x):
        x = self.conv(x)
        x = self.group_norm(x)
        return torch.relu(x)


batch_size = 2
in_channels = 3
out_channels = 12
height = 16
width = 14
kernel_size = 3
num_groups = 3


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, num_groups]
