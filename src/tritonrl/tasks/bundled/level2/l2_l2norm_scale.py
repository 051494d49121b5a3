"""Row L2 normalization with an eps floor, then a constant scale."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Divides each row by max(||row||_2, eps) and multiplies by a constant."""

    def __init__(self, scale, eps):
        super().__init__()
        self.scale = scale
        self.eps = eps

    def forward(self, x):
        norm = torch.linalg.vector_norm(x, ord=2, dim=-1, keepdim=True)
        return x / torch.clamp(norm, min=self.eps) * self.scale


batch_size = 64
dim = 450
scale = 3.0
eps = 1e-12


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [scale, eps]
