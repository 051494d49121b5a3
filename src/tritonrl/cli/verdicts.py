"""What ``tritonrl eval`` prints about each sample: one line as its verdict lands, a table at the end on a terminal,
or with ``--json`` one JSON object per verdict and a ``{"summary": ...}`` line.

    l1_relu.py  l1_relu  CORRECT  done  2.1 s
    l1_matmul.py  l1_matmul  REJECTED  tiny: tiny_mismatch  1.4 s
        trial tiny, seed 42: output 0: 41/72 values off, max abs error 0.00281 (...)
        hint: the error (6.2e-04 of the output's scale) looks like reduced precision: tl.dot (line 24) ...

A sample is named by its file (``--solutions``) or by ``#N`` (its sample number; ``turn t`` in refinement runs).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from tritonrl.evaluation.metrics import INFORMATIONAL_FLAGS
from tritonrl.verify.shared.verdict import clip_words

ERROR_CHARS = 200  # of a rejected sample's first error line (hints: twice that), under its verdict line


def sample_name(row: dict[str, Any]) -> str:
    name = row["file"] if row.get("file") else f"#{row.get('sample', 0)}"
    return name + (f" turn {row['turn']}" if "turn" in row else "")


def verdict_word(result: dict[str, Any]) -> str:
    """CORRECT, REJECTED, or DECLINED: the task cannot be judged on this device (neither correct nor wrong)."""
    if result.get("declined"):
        return "DECLINED"
    return "CORRECT" if result.get("correct") else "REJECTED"


def where(result: dict[str, Any]) -> str:
    """``done`` (with the informational flags, as ``done (reduced_shapes)``), or ``stage: flag, ...``."""
    shown = [f for f in result.get("flags", []) if f != "timing_unavailable"]
    failing = [f for f in shown if f not in INFORMATIONAL_FLAGS]
    if result.get("correct"):
        return "done" + (f" ({', '.join(shown)})" if shown else "")
    return f"{result['stage']}: {', '.join(failing)}" if failing else result["stage"]


def seconds(result: dict[str, Any]) -> str:
    elapsed = result.get("elapsed_s")
    return f"{elapsed:.1f} s" if isinstance(elapsed, (int, float)) else "-"


def verdict_lines(row: dict[str, Any]) -> list[str]:
    """The sample's line and, when rejected, the first line of its error and its hints (``hint: ...``, what to do;
    ``tritonrl.verify.parent.hints``), indented, each cut at a word."""
    result = row["result"]
    lines = ["  ".join([sample_name(row), row["task"], verdict_word(result), where(result), seconds(result)])]
    error = (result.get("error") or result.get("declined") or "").strip().splitlines()
    if error and not result.get("correct"):
        shown = error[:1] + [line for line in error[1:] if line.startswith("hint: ")]
        lines += ["    " + clip_words(line, ERROR_CHARS if i == 0 else 2 * ERROR_CHARS) for i, line in enumerate(shown)]
    return lines


def json_line(row: dict[str, Any]) -> str:
    """``file`` (or null), ``task``, ``sample`` (``turn``), then the verdict's fields (``VerifyResult``)."""
    head = {"file": row.get("file"), "task": row["task"], "sample": row.get("sample", 0)}
    if "turn" in row:
        head["turn"] = row["turn"]
    return json.dumps({**head, **row["result"]})


class VerdictPrinter:
    """``Display.verdict`` for the CLI: each row as it lands, as lines or (``as_json``) a JSON object."""

    def __init__(self, as_json: bool = False) -> None:
        self.as_json = as_json

    def __call__(self, row: dict[str, Any]) -> None:
        text = json_line(row) if self.as_json else "\n".join(verdict_lines(row))
        print(text, flush=True)


def table(rows: list[dict[str, Any]]) -> list[str]:
    """Every sample in order, aligned: sample (file), task, verdict, stage/flag, seconds."""
    header = ["sample", "task", "verdict", "stage: flag", "time"]
    cells = [[sample_name(r), r["task"], verdict_word(r["result"]), where(r["result"]), seconds(r["result"])]
             for r in rows]
    widths = [max(len(c[i]) for c in [header, *cells]) for i in range(len(header))]
    return ["  ".join(c.ljust(w) for c, w in zip(cells_row, widths)).rstrip() for cells_row in [header, *cells]]


def is_terminal(stream: Any = None) -> bool:
    stream = stream or sys.stdout
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def summary_json(report: dict[str, Any], out: Path) -> str:
    keys = ("n_samples", "n_tasks", "format_rate", "valid_rate", "compiled_rate", "correct_rate", "pass_at_k",
            "fast_p", "n_verifier_errors", "n_declined")
    summary = {k: report.get(k) for k in keys}
    if report.get("pass_at_k_note"):
        summary["note"] = report["pass_at_k_note"]
    summary["report"] = str(out / "report.md")
    return json.dumps({"summary": summary})
