"""results.jsonl rows: which a resumed run keeps."""

from tritonrl.common.result_log import judged_rows


def row(task, sample, turn=None, flags=()):
    r = {"task": task, "level": 1, "sample": sample, "task_path": None, "result": {"flags": list(flags)}}
    return r if turn is None else {**r, "turn": turn}


def test_resume_drops_verifier_errors_and_the_attempts_that_answered_them():
    rows = [row("a", 0), row("a", 1, flags=["verifier_error"]), row("b", 0, flags=["no_code"]),
            row("c", 0, 1), row("c", 0, 2, ["verifier_error"]), row("c", 0, 3), row("c", 1, 1), row("c", 1, 2)]
    kept = [(r["task"], r["sample"], r.get("turn")) for r in judged_rows(rows)]
    assert kept == [("a", 0, None), ("b", 0, None), ("c", 0, 1), ("c", 1, 1), ("c", 1, 2)]
