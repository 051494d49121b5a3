"""Strided 2D convolution, then HardSwish, then subtraction of a learned per-channel offset."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Computes hardswish(conv2d(x, stride)) - offset."""

    def __init__(self, in_channels, out_channels, kernel_size, stride, offset_shape):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, stride=stride)
        self.offset = nn.Parameter(torch.randn(offset_shape))

    def forward(self, x):
        x = self.conv(x)
        x = torch.nn.functional.hardswish(x)
        return x - self.offset


batch_size = 2
in_channels = 4
out_channels = 10
height = 21
width = 19
kernel_size = 3
stride = 2
offset_shape = (out_channels, 1, 1)


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, stride, offset_shape]
