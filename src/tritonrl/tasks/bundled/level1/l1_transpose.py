"""Transpose of a 2-D tensor, materialized as a contiguous copy."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Returns x.T as a new contiguous (cols, rows) tensor."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x.transpose(0, 1).contiguous()


rows = 300
cols = 200


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return []
