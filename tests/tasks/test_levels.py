"""Levels read from code: single op, fusion chain, harder."""

import pytest

from tritonrl.tasks import load_tasks
from tritonrl.tasks.levels import classify_level, level_distribution


def _task(init: str, forward: str, extra: str = "") -> str:
    def body(code: str, indent: str) -> str:
        return "".join(f"{indent}{line}\n" for line in code.splitlines())

    return ("import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n" + extra
            + "class Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n" + body(init, "        ")
            + "    def forward(self, x):\n" + body(forward, "        ")
            + "def get_inputs():\n    return [torch.randn(4, 4)]\ndef get_init_inputs():\n    return []\n")


@pytest.mark.parametrize("init, forward, level", [
    ("", "return torch.softmax(x, dim=1)", 1),
    ("", "return x.view(2, 8).transpose(0, 1).contiguous().relu()", 1),  # reshapes are free
    ("self.conv = nn.Conv2d(3, 8, 3)", "return self.conv(x)", 1),
    ("self.fc = nn.Linear(4, 4)", "x = self.fc(x)\nreturn F.gelu(x) * 2.0", 2),
    ("", "return torch.sum(x * x, dim=1)", 2),
    ("", "for _ in range(3):\n    x = torch.tanh(x)\nreturn x", 3),
    ("self.layers = nn.Sequential(nn.Linear(4, 4), nn.ReLU())", "return self.layers(x)", 3),
    ("self.rnn = nn.LSTM(4, 4)", "return self.rnn(x)[0]", 3),
    ("", "\n".join(["x = x + 1.0"] * 14) + "\nreturn x", 3),
])
def test_classify(init, forward, level):
    assert classify_level(_task(init, forward)) == level


def test_helpers_called_by_forward_are_counted():
    helper = "def act(t):\n    return torch.tanh(torch.sigmoid(t) * 2.0)\n"
    assert classify_level(_task("", "return act(x)", extra=helper)) == 2


def test_bundled_labels_mostly_agree_with_dirs():
    tasks = load_tasks("bundled")
    disagree = [(t.name, t.level, classify_level(t.source)) for t in tasks if classify_level(t.source) != t.level]
    print("disagreements (name, dir level, code level):", disagree)
    assert 1 - len(disagree) / len(tasks) >= 0.8


def test_level_distribution():
    tasks = load_tasks("bundled")
    dist = level_distribution(tasks)
    assert sum(dist.values()) == len(tasks) and list(dist) == sorted(dist)
