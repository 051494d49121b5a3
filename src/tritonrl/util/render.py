"""Small renderers shared by the reports of evaluation and training: a number as text, a Markdown table, pyplot.

    fmt(0.25) == "25.0%"; markdown_table(["a", "b"], [["1", "2"]]) -> lines; plt = pyplot() (None without matplotlib)
"""

from __future__ import annotations

from typing import Any


def fmt(value: Any, percent: bool = True, unavailable: str = "n/a") -> str:
    if value is None:
        return unavailable
    if isinstance(value, float) and percent:
        return f"{100 * value:.1f}%"
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


def markdown_table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return lines + [""]


def pyplot():
    """matplotlib's pyplot on the Agg backend, or None when matplotlib is not installed (core install)."""
    try:
        import matplotlib
    except ImportError:
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt
