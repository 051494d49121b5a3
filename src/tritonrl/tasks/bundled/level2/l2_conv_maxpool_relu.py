"""2D convolution, then max pooling, then ReLU."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Computes relu(max_pool2d(conv2d(x), pool_kernel_size))."""

    def __init__(self, in_channels, out_channels, kernel_size, pool_kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.pool = nn.MaxPool2d(pool_kernel_size)

    def forward(self, x):
        x = self.conv(x)
        x = self.pool(x)
        return torch.relu(x)


batch_size = 2
in_channels = 3
out_channels = 8
height = 17
width = 15
kernel_size = 3
pool_kernel_size = 2


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, pool_kernel_size]
