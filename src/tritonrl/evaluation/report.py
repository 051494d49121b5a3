"""Reports of an evaluation: ``report.json``, ``report.md`` and PNG plots, rebuilt from ``results.jsonl`` alone.

    tritonrl report out/eval/results.jsonl --out out/eval      # no GPU, no model needed
    tritonrl compare out/base out/sft out/rl --out out/compare # eval dirs, or pipeline run dirs

``results.jsonl`` has one row per sample: ``task``, ``level``, ``sample``, ``completion``, ``code``,
``result`` (a ``VerifyResult`` dict) and, for a solution file, ``file`` (named in report.md and report.json).
Verifier errors (the verifier failed, not the kernel) and declined samples (tasks this device cannot judge within
its budget: neither correct nor wrong) are counted and listed apart, never in a rate. The numbers
come from ``tritonrl.evaluation.metrics``; this module only lays them out.
A run with refinement turns (rows with ``turn``) reports its first attempts in the headline, per-level and
per-task sections (comparable with a single-turn run) and correct@t, fast_p@t, speedup@t per turn in
"Refinement turns" (``report.json``: ``turns``) and ``turns.png``.
A run whose format or compile rate is 0 gets a loud warning at the top of ``report.md`` (and on stderr from
the caller): that is the signature of a harness bug (wrong extraction, wrong path), not of a bad model.
"""

from __future__ import annotations

import json
import math
import os
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from tritonrl.errors import UserError
from tritonrl.evaluation import metrics
from tritonrl.evaluation.metrics import Sample
from tritonrl.util.jsonl import iter_jsonl
from tritonrl.util.render import fmt, markdown_table, pyplot
from tritonrl.verify.shared.verdict import VerifyResult

REPORT_JSON = "report.json"
REPORT_MD = "report.md"
RESULTS_JSONL = "results.jsonl"
ROW_KEYS = ("task", "level", "result")
MAX_ERROR_LINE = 200  # characters of an error's first line in report.md
MAX_ERROR_ROWS = 200  # samples listed in report.md's "Samples not correct" (report.json has them all)


# ---------------------------------------------------------------- reading results
def load_results(path: str | Path) -> list[dict[str, Any]]:
    """Rows of a ``results.jsonl``; a missing file or a malformed line is a one-line ``UserError``."""
    path = Path(path)
    if path.is_dir():
        path = path / RESULTS_JSONL
    if not path.is_file():
        raise UserError(f"results file not found: {path}")
    rows = []
    for lineno, row in iter_jsonl(path):
        missing = [k for k in ROW_KEYS if not isinstance(row, dict) or k not in row]
        if missing:
            raise UserError(f"{path}:{lineno}: result row lacks {', '.join(missing)}")
        rows.append(row)
    return rows


def to_samples(rows: list[dict[str, Any]]) -> list[Sample]:
    return [Sample(row["task"], int(row["level"]), VerifyResult.from_dict(row["result"]), int(row.get("sample", 0)),
                   int(row.get("turn", 1))) for row in rows]


def is_multiturn(rows: list[dict[str, Any]]) -> bool:
    """Rows of a refinement run carry ``turn`` (single-turn rows do not)."""
    return any("turn" in row for row in rows)


def default_ks(samples: list[Sample]) -> list[int]:
    """pass@1 and pass@n for the smallest per-task sample count n (the k the run was made with)."""
    groups = metrics.group_by_task(samples)
    if not groups:
        return [1]
    return sorted({1, min(len(g) for g in groups.values())})


# ---------------------------------------------------------------- building the report
def build_report(rows: list[dict[str, Any]], meta: dict[str, Any] | None = None) -> dict[str, Any]:
    """Everything ``report.json`` holds: headline metrics, per level, per task, failures, warnings.

    Rows whose verdict is a verifier error are no verdict on the kernel: they are left out of every number and
    listed apart (``n_verifier_errors``, ``verifier_errors``); so are declined rows (``n_declined``, ``declined``:
    each with its reason, ``declined_tasks``: the tasks)."""
    unjudged = [r for r in rows if _verifier_error(r)]
    declined = [r for r in rows if not _verifier_error(r) and _declined(r)]
    rows = [r for r in rows if not _verifier_error(r) and not _declined(r)]
    every = to_samples(rows)
    timed = metrics.timing_available(every)
    samples = metrics.first_attempts(every) if is_multiturn(rows) else every
    ks = default_ks(samples)
    report: dict[str, Any] = {"meta": dict(meta or {})}
    report.update(metrics.summarize(samples, ks, timed))
    if is_multiturn(rows):
        report["turns"] = turns_summary(every, rows, timed, report["meta"].get("turns"))
    report["per_level"] = metrics.per_level(samples, ks, timed)
    report["per_task"] = metrics.per_task(samples, ks, timed)
    report["failures"] = metrics.failure_breakdown(samples)
    report["funnel"] = metrics.stage_funnel(samples)
    report["errors"] = sample_errors(rows)
    report["n_verifier_errors"] = len(unjudged)
    report["verifier_errors"] = sample_errors(unjudged)
    report["n_declined"] = len(declined)
    report["declined"] = declined_samples(declined)
    report["declined_tasks"] = list(dict.fromkeys(e["task"] for e in report["declined"]))
    if any(row.get("file") for row in rows + unjudged + declined):
        report["files"] = solution_files(rows) + [{**e, "verdict": "verifier error"}
                                                  for e in report["verifier_errors"] if e.get("file")]
        report["files"] += [{k: e[k] for k in ("file", "task", "sample")} | {"verdict": "declined"}
                            for e in report["declined"] if e.get("file")]
    report["warnings"] = harness_warnings(report, [r for r in rows if r.get("turn", 1) == 1])
    note = pass_at_k_note(rows)
    if note:
        report["pass_at_k_note"] = note
    return report


def pass_at_k_note(rows: list[dict[str, Any]]) -> str | None:
    """A solutions directory with several files for one problem: they count as its samples, so a problem with one
    correct file among a wrong and a cheating one shows pass@3 100%. Documented, easy to misread: said in one line
    beside pass@k (report.md, the CLI's summary)."""
    counts = Counter(row["task"] for row in rows if row.get("file") and row.get("turn", 1) == 1)
    several = [(task, n) for task, n in counts.items() if n > 1]
    if not several:
        return None
    listed = ", ".join(f"{task} {n} files" for task, n in several[:3]) + (", ..." if len(several) > 3 else "")
    return (f"note: several files for one problem are its samples ({listed}): pass@k counts a problem solved when "
            "any of k of its files is correct; pass@1 is the share of its files that are")


def _verifier_error(row: dict[str, Any]) -> bool:
    return metrics.is_verifier_error(VerifyResult.from_dict(row["result"]))


def _declined(row: dict[str, Any]) -> bool:
    return metrics.is_declined(VerifyResult.from_dict(row["result"]))


def declined_samples(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each declined sample: task, sample (turn, file) and why its task could not be judged here."""
    found = []
    for row in rows:
        entry = {"task": row["task"], "sample": int(row.get("sample", 0)),
                 "reason": (row["result"].get("declined") or "declined").strip()}
        entry |= {k: row[k] for k in ("turn", "file") if row.get(k) is not None}
        found.append(entry)
    return found


def turns_summary(samples: list[Sample], rows: list[dict[str, Any]], timed: bool,
                  n_turns: int | None = None) -> dict[str, Any]:
    """Per-turn metrics (up to ``n_turns`` when the run's setting is known, else the last turn judged), and how
    many prompts had to be shortened to fit their token budget."""
    contexts = [row.get("prompt_context") or {} for row in rows]
    return {"per_turn": metrics.per_turn(samples, timed, n_turns),
            "n_trajectories": len({(s.task, s.index) for s in samples}),
            "n_prompts_summarised": sum(bool(c.get("summarised") or c.get("latest_code_dropped")) for c in contexts),
            "n_prompts_over_budget": sum(bool(c.get("over_budget")) for c in contexts)}


def sample_errors(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every sample that is not correct: task, sample, category (stage, or ``cpu_size_limit``), flags and the
    first line of its error."""
    errors = []
    for row, sample in zip(rows, to_samples(rows)):
        if sample.result.correct:
            continue
        error = (sample.result.error or "").strip().splitlines()
        errors.append({"task": row["task"], "sample": int(row.get("sample", 0)),
                       "category": metrics.failure_category(sample.result), "flags": sample.result.flags,
                       "error": error[0][:MAX_ERROR_LINE] if error else ""})
        hints = [line.removeprefix("hint: ") for line in error[1:] if line.startswith("hint: ")]
        if hints:  # what to do (tritonrl.verify.parent.hints): whole, beside the error's first line
            errors[-1]["hint"] = " ".join(hints)
        if "turn" in row:
            errors[-1]["turn"] = sample.turn
        if row.get("file"):
            errors[-1]["file"] = row["file"]
    return errors


def solution_files(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``--solutions`` runs: each file's task, sample and verdict (``correct``, else the category it failed at)."""
    return [{"file": row["file"], "task": row["task"], "sample": int(row.get("sample", 0)),
             "verdict": "correct" if s.result.correct else f"failed at {metrics.failure_category(s.result)}"}
            for row, s in zip(rows, to_samples(rows)) if row.get("file")]


def _sample_name(entry: dict[str, Any]) -> str:
    """``task #sample`` (``turn t``) (``file``): how report.md names one sample."""
    name = f"{entry['task']} #{entry['sample']}" + (f" turn {entry['turn']}" if "turn" in entry else "")
    return name + (f" ({entry['file']})" if entry.get("file") else "")


def harness_warnings(report: dict[str, Any], rows: list[dict[str, Any]], n_examples: int = 3) -> list[str]:
    """A loud warning for a 0 format rate, else for a 0 compile rate, with examples of the failing outputs."""
    for key, stage_name in (("format_rate", "format"), ("compiled_rate", "compile")):
        if report["n_samples"] and report[key] == 0:
            examples = [_example(row) for row in rows[:n_examples]]
            return [f"{key} is 0 over {report['n_samples']} samples: every sample failed at or before the "
                    f"{stage_name} stage. Unless the model is an untrained smoke-test model, this is the signature "
                    "of a harness bug (extraction, paths, chat template), not of a bad model. Examples:\n"
                    + "\n".join(examples)]
    return []


def _example(row: dict[str, Any], max_chars: int = 300) -> str:
    text = (row.get("completion") or row.get("code") or "").strip().replace("\n", "\\n")
    if len(text) > max_chars:
        text = text[:max_chars] + "..."
    result = row["result"]
    error = (result.get("error") or "").splitlines()[0][:200] if result.get("error") else ""
    return (f"  - {row['task']} #{row.get('sample', 0)}: stage={result['stage']} flags={result.get('flags')} "
            f"error={error!r}\n    output: {text!r}")


def print_warnings(report: dict[str, Any], out: str | Path | None = None, stream=None) -> None:
    """Warnings to stderr, framed so that nobody scrolls past them, each saying which report has it (``out``: the
    directory of ``report.md``)."""
    stream = stream or sys.stderr
    where = f"\n(also at the top of {Path(out) / REPORT_MD}, with every sample's verdict)" if out is not None else ""
    for warning in report.get("warnings", []):
        bar = "!" * 100
        print(f"{bar}\nWARNING: {warning}{where}\n{bar}", file=stream)


# ---------------------------------------------------------------- writing it out
def write_report(rows: list[dict[str, Any]], out_dir: str | Path, meta: dict[str, Any] | None = None,
                 title: str = "Evaluation report") -> dict[str, Any]:
    """Write ``report.json``, ``report.md`` and the plots into ``out_dir``; return the report."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    report = build_report(rows, meta)
    samples = to_samples(rows)
    report["plots"] = write_run_plots(report, metrics.speedups(samples), out)
    if "turns" in report:
        report["plots"] += write_turns_plot(report, out)
    (out / REPORT_JSON).write_text(json.dumps(report, indent=2, sort_keys=False) + "\n")
    (out / REPORT_MD).write_text(render_markdown(report, title))
    return report


def render_markdown(report: dict[str, Any], title: str = "Evaluation report") -> str:
    """The report a person reads first: warnings, headline rates, pass@k, fast_p, per level, per task, failures."""
    lines = [f"# {title}", ""]
    for warning in report.get("warnings", []):
        lines += ["> **WARNING: possible harness bug.**", ">"]
        lines += [f"> {line}" for line in warning.splitlines()] + [""]
    meta = report.get("meta", {})
    if meta:
        lines += [", ".join(f"{k}: `{v}`" for k, v in meta.items() if v is not None), ""]
    if "turns" in report:
        lines += ["Refinement run: the headline, per-level, per-task and failure sections describe first attempts "
                  "(turn 1), as a single-turn run would; see **Refinement turns** for correct@t.", ""]
    lines += _verifier_errors_note(report) + _declined_note(report) + ["## Headline", ""]
    headline = [["samples", str(report["n_samples"])], ["tasks", str(report["n_tasks"])]]
    headline += [[name, fmt(report[f"{name}_rate"])] for name in metrics.RATE_NAMES]
    lines += markdown_table(["metric", "value"], headline)
    lines += ["## pass@k and fast_p", ""]
    unavailable = "unavailable (not timed)"
    cells = [[k, fmt(v)] for k, v in report["pass_at_k"].items()]
    cells += [[f"{k} (@1, per task)", fmt(v, unavailable=unavailable)] for k, v in report["fast_p"].items()]
    cells.append(["geomean speedup (correct, timed)", fmt(report["geomean_speedup"], False, unavailable)])
    lines += markdown_table(["metric", "value"], cells)
    if report.get("pass_at_k_note"):
        lines += [report["pass_at_k_note"][0].upper() + report["pass_at_k_note"][1:] + ".", ""]
    if not report["timing_available"]:
        note = ("Timing unavailable (CPU run): fast_p for p > 0 and speedups are reported as unavailable, never as 0; "
                "there is no speedup plot.")
        lines += [note, ""]
    elif report["geomean_speedup"] is None:
        lines += ["No correct sample was timed: there is no speedup plot.", ""]
    lines += _machine_notes(report) + _turns_md(report)
    lines += _per_level_md(report) + _per_task_md(report) + _files_md(report) + _failures_md(report)
    lines += _errors_md(report)
    if report.get("plots"):
        lines += ["## Plots", ""] + [f"![{Path(p).stem}]({p})" for p in report["plots"]] + [""]
    return "\n".join(lines)


def _verifier_errors_note(report: dict[str, Any]) -> list[str]:
    """Samples that got no verdict because the verifier failed: counted, listed, never in a rate."""
    errors = report.get("verifier_errors") or []
    if not errors:
        return []
    lines = [f"**{len(errors)} verifier errors**: the verifier itself failed on these samples (flag "
             "`verifier_error`), so they have no verdict. They are left out of every number below; the same "
             "`tritonrl eval` command with `--resume` judges them again.", ""]
    rows = [[_sample_name(e), e["error"].replace("|", "\\|") or "-"] for e in errors[:MAX_ERROR_ROWS]]
    return lines + markdown_table(["sample", "error"], rows)


def _declined_note(report: dict[str, Any]) -> list[str]:
    """Samples of tasks this device cannot judge: counted, named with the reason, never in a rate."""
    declined = report.get("declined") or []
    if not declined:
        return []
    tasks = report.get("declined_tasks") or sorted({e["task"] for e in declined})
    lines = [f"**{len(declined)} samples declined** ({len(tasks)} tasks: {', '.join(tasks)}): this device cannot "
             "judge these tasks within its budget, so their samples are neither correct nor wrong (`\"correct\": "
             "null`, flag `declined`). They are left out of every number below; judge them on a GPU.", ""]
    reasons: dict[str, list[dict[str, Any]]] = {}
    for entry in declined:
        reasons.setdefault(entry["task"], []).append(entry)
    rows = [[task, str(len(entries)), entries[0]["reason"].replace("|", "\\|")] for task, entries in reasons.items()]
    return lines + markdown_table(["task", "samples", "why not judged"], rows)


def _machine_notes(report: dict[str, Any]) -> list[str]:
    """What the machine changed: shapes reduced for the CPU, timeouts at sizes the CPU could not run."""
    lines = []
    if report.get("n_reduced_shapes"):
        lines += [f"{report['n_reduced_shapes']} of {report['n_samples']} samples were judged at shapes reduced "
                  "to fit the CPU budget (flag `reduced_shapes`; `verify.cpu_max_numel`, `verify.cpu_max_flops`).",
                  ""]
    if report.get("n_cpu_size_limit"):
        lines += [f"{report['n_cpu_size_limit']} samples timed out on the CPU at sizes over its budget that could "
                  "not be reduced (category `cpu_size_limit`): the machine's limit; judge them on a GPU.", ""]
    return lines


def _turns_md(report: dict[str, Any]) -> list[str]:
    if "turns" not in report:
        return []
    turns = report["turns"]
    unavailable = "n/a (not timed)"
    thresholds = [k for k in turns["per_turn"][0]["fast_p"] if k != "fast_0"] if turns["per_turn"] else []
    rows = [[str(t["turn"]), str(t["attempts"]), fmt(t["correct"]),
             *(fmt(t["fast_p"][k], unavailable=unavailable) for k in thresholds),
             fmt(t["speedup"], False, unavailable)] for t in turns["per_turn"]]
    lines = ["## Refinement turns", "",
             f"{turns['n_trajectories']} trajectories (task x sample). At turn t a trajectory counts with its best "
             "attempt at or before t (one that stopped early, correct, keeps it); `attempts` is how many were "
             "judged at t.", ""]
    lines += markdown_table(["turn", "attempts", "correct@t", *(f"{k}@t" for k in thresholds), "speedup@t (geomean best)"],
                    rows)
    if turns["n_prompts_summarised"]:
        lines += [f"{turns['n_prompts_summarised']} prompts had their oldest attempts summarised (or the latest "
                  f"code left out) to fit the token budget; {turns['n_prompts_over_budget']} exceeded it even so "
                  "(`prompt_context` in results.jsonl).", ""]
    return lines


def _errors_md(report: dict[str, Any]) -> list[str]:
    errors = report.get("errors", [])
    if not errors:
        return []
    turns, files = any("turn" in e for e in errors), any("file" in e for e in errors)
    rows = [[e["task"], str(e["sample"]), *([str(e.get("turn", 1))] if turns else []),
             *([e.get("file", "-")] if files else []), e["category"], ", ".join(e["flags"]) or "-",
             (e["error"] + (f" (hint: {e['hint']})" if e.get("hint") else "")).replace("|", "\\|") or "-"]
            for e in errors[:MAX_ERROR_ROWS]]
    header = ["task", "sample", *(["turn"] if turns else []), *(["file"] if files else []), "failed at", "flags",
              "error"]
    lines = ["## Samples not correct", ""] + markdown_table(header, rows)
    if len(errors) > MAX_ERROR_ROWS:
        lines += [f"... and {len(errors) - MAX_ERROR_ROWS} more in report.json (`errors`).", ""]
    return lines


def _files_md(report: dict[str, Any]) -> list[str]:
    if not report.get("files"):
        return []
    rows = [[f["file"], f["task"], str(f["sample"]), f["verdict"]] for f in report["files"]]
    return ["## Solution files", ""] + markdown_table(["file", "task", "sample", "verdict"], rows)


def _per_level_md(report: dict[str, Any]) -> list[str]:
    rows = [[lv, str(s["n_samples"]), str(s["n_tasks"]), *(fmt(s[f"{r}_rate"]) for r in metrics.RATE_NAMES),
             fmt(s["pass_at_k"].get("pass@1"))] for lv, s in report["per_level"].items()]
    return ["## Per level", ""] + markdown_table(["level", "samples", "tasks", *metrics.RATE_NAMES, "pass@1"], rows)


def _per_task_md(report: dict[str, Any]) -> list[str]:
    rows = []
    for name, t in report["per_task"].items():
        counts = [f"{t[f'n_{r}']}/{t['n']}" for r in metrics.RATE_NAMES]
        rows.append([name, str(t["level"]), *counts, fmt(t["best_speedup"], False), t["top_failure"] or "-"])
    header = ["task", "level", *metrics.RATE_NAMES, "best speedup", "top failure"]
    return ["## Per task", ""] + markdown_table(header, rows)


def _failures_md(report: dict[str, Any]) -> list[str]:
    failures = report["failures"]
    lines = ["## Failures", ""]
    lines += markdown_table(["failed at", "samples"], [[k, str(v)] for k, v in failures["by_stage"].items()] or
                    [["(none)", "0"]])
    lines += markdown_table(["flag", "samples"], [[k, str(v)] for k, v in failures["by_flag"].items()] or [["(none)", "0"]])
    return lines


# ---------------------------------------------------------------- comparing runs
def find_report(path: str | Path) -> list[tuple[str, Path]]:
    """(name, report.json) pairs: an eval dir gives itself; a pipeline run dir gives each ``eval/<name>``."""
    path = Path(path)
    if path.is_file() and path.name == REPORT_JSON:
        return [(path.parent.name, path)]
    if (path / REPORT_JSON).is_file():
        return [(path.name, path / REPORT_JSON)]
    order = {"base": 0, "sft": 1, "rl": 2}  # the pipeline's models, in training order
    found = sorted(((p.parent.name, p) for p in path.glob(f"eval/*/{REPORT_JSON}")),
                   key=lambda item: (order.get(item[0], len(order)), item[0]))
    if not found:
        raise UserError(f"no {REPORT_JSON} in {path} (nor in {path}/eval/*/): run `tritonrl eval` first")
    return found


COMPARE_KEYS = ("format_rate", "valid_rate", "compiled_rate", "correct_rate")


def compare_runs(paths: list[str | Path], out_dir: str | Path) -> dict[str, Any]:
    """A table (and plot) of the headline metrics of several runs: base vs SFT vs RL."""
    runs: dict[str, dict[str, Any]] = {}
    out = Path(out_dir)
    for path in paths:
        for name, report_path in find_report(path):
            key = name if name not in runs else f"{Path(path).name}/{name}"
            runs[key] = json.loads(report_path.read_text())
            md = report_path.with_name(REPORT_MD)  # where a run's warning is explained: named beside it
            runs[key]["report_md"] = [str(md), os.path.relpath(md.resolve(), out.resolve())]
    out.mkdir(parents=True, exist_ok=True)
    table = {name: _comparable(r) for name, r in runs.items()}
    comparison = {"runs": table, "plots": write_comparison_plot(table, out)}
    (out / "comparison.json").write_text(json.dumps(comparison, indent=2) + "\n")
    (out / "comparison.md").write_text(render_comparison(comparison))
    return comparison


def _comparable(report: dict[str, Any]) -> dict[str, Any]:
    row = {k: report.get(k) for k in ("n_samples", "n_tasks", *COMPARE_KEYS, "geomean_speedup")}
    row.update(report.get("pass_at_k", {}))
    row.update(report.get("fast_p", {}))
    row["warnings"] = len(report.get("warnings", []))
    row["report_md"] = report.get("report_md")
    for turn in report.get("turns", {}).get("per_turn", []):
        row[f"correct@{turn['turn']}"] = turn["correct"]
    return row


def render_comparison(comparison: dict[str, Any]) -> str:
    runs = comparison["runs"]
    first = [*COMPARE_KEYS]
    rest = sorted({k for row in runs.values() for k in row} - {*first, "n_samples", "n_tasks", "warnings",
                                                                 "geomean_speedup", "report_md"},
                  key=lambda k: (not k.startswith("pass"), float(k.split("_")[1]) if k.startswith("fast_") else 0, k))
    keys = [*first, *rest, "geomean_speedup"]
    rows = [[name, str(r["n_samples"]), *(fmt(r.get(k), percent=k != "geomean_speedup") for k in keys),
             _warning_cell(r)] for name, r in runs.items()]
    header = ["run", "samples", *(k.removesuffix("_rate") for k in keys), "harness warning"]
    lines = ["# Comparison", ""] + markdown_table(header, rows)
    lines += [f"![{Path(p).stem}]({p})" for p in comparison["plots"]] + [""]
    return "\n".join(lines)


def _warning_cell(row: dict[str, Any]) -> str:
    """"YES: see <the run's report.md>" (a link relative to the comparison), where the warning is explained."""
    if not row["warnings"]:
        return ""
    if not row.get("report_md"):
        return "YES: see the run's report.md"
    shown, link = row["report_md"]
    return f"YES: see [{shown}]({link})"


# ---------------------------------------------------------------- plots (matplotlib, Agg: no display needed)
def write_run_plots(report: dict[str, Any], speedups: list[float], out: Path) -> list[str]:
    """``funnel.png``, and ``speedups.png`` when some correct sample was timed (a CPU run has none: report.md says
    so instead of a picture of that sentence), in ``out``; returns their file names (empty without matplotlib).
    A ``speedups.png`` of an earlier run in ``out`` that no longer applies is removed."""
    plt = pyplot()
    if plt is None:
        return []
    plots = [_funnel_plot(plt, report, out / "funnel.png")]
    if speedups:
        plots.append(_speedup_plot(plt, speedups, out / "speedups.png"))
    else:
        (out / "speedups.png").unlink(missing_ok=True)
    return plots


def _funnel_plot(plt, report: dict[str, Any], path: Path) -> str:
    funnel = report["funnel"]
    labels = ["samples", "format ok", "valid", "compiled", "tiny correct", "correct"]
    counts = list(funnel.values())
    total = max(funnel["samples"], 1)
    fig, ax = plt.subplots(figsize=(7, 3.6))
    bars = ax.barh(labels[::-1], counts[::-1], color=["#2b8a3e", "#5c940d", "#e67700", "#1971c2", "#1864ab",
                                                      "#868e96"])
    for bar, count in zip(bars, counts[::-1]):
        ax.text(bar.get_width() + total * 0.01, bar.get_y() + bar.get_height() / 2,
                f"{count} ({100 * count / total:.0f}%)", va="center", fontsize=9)
    ax.set_xlim(0, total * 1.25)
    ax.set_xlabel("samples that passed the stage")
    declined = f"; {report['n_declined']} declined, not shown" if report.get("n_declined") else ""
    ax.set_title(f"Verification funnel ({funnel['samples']} samples, {report['n_tasks']} tasks{declined})")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path.name


def _speedup_plot(plt, speedups: list[float], path: Path) -> str:
    fig, ax = plt.subplots(figsize=(7, 3.6))
    low, high = min(min(speedups), 0.5), max(max(speedups), 2.5)
    bins = [math.exp(math.log(low) + i * (math.log(high) - math.log(low)) / 15) for i in range(16)]
    ax.hist(speedups, bins=bins, color="#1971c2", edgecolor="white")
    ax.set_xscale("log")
    ticks = [t for t in (0.1, 0.25, 0.5, 1, 1.5, 2, 3, 5, 10, 20) if low <= t <= high * 1.05]
    ax.set_xticks(ticks, [f"{t:g}x" for t in ticks])
    ax.xaxis.set_minor_formatter(plt.NullFormatter())
    ax.yaxis.set_major_locator(plt.MaxNLocator(integer=True))
    for p, style in ((1.0, "-"), (1.5, "--"), (2.0, ":")):
        ax.axvline(p, color="#c92a2a", linestyle=style, label=f"{p:g}x")
    ax.set_xlabel("speedup over the PyTorch reference (log scale)")
    ax.set_ylabel("correct samples")
    ax.legend(title="fast_p threshold")
    ax.set_title("Speedup distribution (correct samples)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path.name


def write_turns_plot(report: dict[str, Any], out: Path) -> list[str]:
    """``turns.png``: correct@t and fast_p@t (when timed) against the refinement turn."""
    plt = pyplot()
    if plt is None or not report["turns"]["per_turn"]:
        return []
    per_turn = report["turns"]["per_turn"]
    turns = [t["turn"] for t in per_turn]
    fig, ax = plt.subplots(figsize=(6, 3.6))
    ax.plot(turns, [100 * t["correct"] for t in per_turn], marker="o", label="correct@t")
    for key in [k for k in per_turn[0]["fast_p"] if k != "fast_0"]:
        values = [t["fast_p"][key] for t in per_turn]
        if all(v is not None for v in values):
            ax.plot(turns, [100 * v for v in values], marker=".", linestyle="--", label=f"{key}@t")
    ax.set_xticks(turns)
    ax.set_ylim(0, 105)
    ax.set_xlabel("refinement turn")
    ax.set_ylabel("% of trajectories (at or before turn t)")
    title = "Refinement turns" + ("" if report["timing_available"] else " (CPU: fast_p@t not timed)")
    ax.set_title(title)
    ax.legend(loc="lower right")
    fig.tight_layout()
    path = out / "turns.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return [path.name]


def write_comparison_plot(runs: dict[str, dict[str, Any]], out: Path) -> list[str]:
    """``comparison.png``: grouped bars of the headline rates, pass@1 and fast_1 per run."""
    plt = pyplot()
    if plt is None or not runs:
        return []
    keys = [*COMPARE_KEYS, "pass@1", "fast_1"]
    fig, ax = plt.subplots(figsize=(max(7, 1.2 * len(keys) * max(1, len(runs)) / 2), 4))
    width = 0.8 / len(runs)
    for i, (name, row) in enumerate(runs.items()):
        values = [row.get(k) for k in keys]
        xs = [j + i * width for j in range(len(keys))]
        where = row["report_md"][1].removeprefix("../") if row.get("report_md") else "its report.md"  # eval/base/...
        label = f"{name} (harness warning: see {where})" if row.get("warnings") else name
        ax.bar(xs, [100 * v if v is not None else 0 for v in values], width, label=label)
        for x, v in zip(xs, values):
            ax.text(x, (100 * v if v is not None else 0) + 1, "n/a" if v is None else f"{100 * v:.0f}",
                    ha="center", fontsize=8)
    ax.set_xticks([j + width * (len(runs) - 1) / 2 for j in range(len(keys))])
    ax.set_xticklabels([k.replace("_rate", "") for k in keys])
    ax.set_ylim(0, 110)
    ax.set_ylabel("% (n/a: unavailable, e.g. fast_1 on CPU)")
    ax.set_title("Runs compared")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0))  # outside the axes: never over a bar
    fig.tight_layout()
    path = out / "comparison.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return [path.name]
