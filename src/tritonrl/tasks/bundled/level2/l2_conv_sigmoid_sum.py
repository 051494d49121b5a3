"""2D convolution, then sigmoid, then a sum over the channels."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Computes sigmoid(conv2d(x)).sum(dim=1, keepdim=True)."""

    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)

    def forward(self, x):
        x = self.conv(x)
        x = torch.sigmoid(x)
        return torch.sum(x, dim=1, keepdim=True)


batch_size = 2
in_channels = 3
out_channels = 12
height = 15
width = 16
kernel_size = 3


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
