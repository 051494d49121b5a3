"""Rebuild completions.jsonl from completions/*.md (one raw model output per file).

    python examples/golden/build.py          # writes examples/golden/completions.jsonl

File names are ``NN_<task>__<kind>.md``: the order, the bundled task, and what the completion is meant to show.
``tests/test_golden.py`` checks that the committed completions.jsonl is what this script writes.
"""

import json
from pathlib import Path

HERE = Path(__file__).parent


def build() -> str:
    lines = []
    for path in sorted((HERE / "completions").glob("*.md")):
        task, kind = path.stem.split("_", 1)[1].split("__")
        lines.append(json.dumps({"task": task, "kind": kind, "completion": path.read_text()}))
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    (HERE / "completions.jsonl").write_text(build())
    print(f"wrote {HERE / 'completions.jsonl'}")
