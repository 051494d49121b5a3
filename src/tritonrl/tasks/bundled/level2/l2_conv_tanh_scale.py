"""Padded 2D convolution, then tanh, then multiplication by a learned per-channel scale."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Computes tanh(conv2d(x, padding)) * scale."""

    def __init__(self, in_channels, out_channels, kernel_size, padding, scale_shape):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=padding)
        self.scale = nn.Parameter(torch.randn(scale_shape))

    def forward(self, x):
        x = self.conv(x)
        x = torch.tanh(x)
        return x * self.scale


batch_size = 2
in_channels = 3
out_channels = 12
height = 14
width = 18
kernel_size = 3
padding = 1
scale_shape = (out_channels, 1, 1)


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, padding, scale_shape]
