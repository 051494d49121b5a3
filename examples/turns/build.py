"""Rebuild completions.jsonl from completions/*.md: two trajectories of two turns each, to replay with
``tritonrl eval --completions examples/turns/completions.jsonl --timeout 20 --out out/turns``.

    python examples/turns/build.py          # writes examples/turns/completions.jsonl

File names are ``<task>__turn<N>.md``: a bundled task and the turn of its one trajectory (sample 0). Turn 1 of
each fails (l1_relu: PyTorch does the work; l1_sigmoid: an epsilon that shifts every output), turn 2 answers the
feedback and is correct, so the replay reports correct@1 = 0% and correct@2 = 100%.
``tests/test_multiturn_eval.py`` checks that the committed file is what this script writes, and replays it.
"""

import json
from pathlib import Path

HERE = Path(__file__).parent


def build() -> str:
    lines = []
    for path in sorted((HERE / "completions").glob("*.md")):
        task, turn = path.stem.split("__turn")
        lines.append(json.dumps({"task": task, "sample": 0, "turn": int(turn), "completion": path.read_text()}))
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    (HERE / "completions.jsonl").write_text(build())
    print(f"wrote {HERE / 'completions.jsonl'}")
