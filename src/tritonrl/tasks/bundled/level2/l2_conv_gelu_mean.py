"""2D convolution, then exact GELU, then global average pooling over the image."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Computes gelu(conv2d(x)).mean(dim=(2, 3)), one value per (sample, channel)."""

    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)

    def forward(self, x):
        x = self.conv(x)
        x = torch.nn.functional.gelu(x)
        return torch.mean(x, dim=(2, 3))


batch_size = 2
in_channels = 3
out_channels = 8
height = 16
width = 16
kernel_size = 3


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
