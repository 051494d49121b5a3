"""1D convolution over a sequence, then ReLU, then a max over the sequence length."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Computes relu(conv1d(x)).amax(dim=2), one value per (sample, channel)."""

    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size)

    def forward(self, x):
        x = self.conv(x)
        x = torch.relu(x)
        return torch.amax(x, dim=2)


batch_size = 4
in_channels = 6
out_channels = 20
length = 50
kernel_size = 5


def get_inputs():
    return [torch.randn(batch_size, in_channels, length)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
