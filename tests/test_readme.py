"""The README's examples run: each `tritonrl ...` line of "Using it" and its Python snippet.

Lines that need something the test machine lacks (a KernelBench clone, written as ``path/to``) are skipped.
"""

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
USING = README.split("## Using it", 1)[1].split("\n## ", 1)[0]
BLOCKS = re.findall(r"```(\w+)\n(.*?)```", USING, flags=re.S)
COMMANDS = [line.split("  #")[0].strip() for lang, body in BLOCKS if lang == "bash"
            for line in body.splitlines() if line.startswith("tritonrl ") and "path/to" not in line]
TRITONRL = str(Path(sys.executable).with_name("tritonrl"))


def test_readme_has_examples():
    assert len(COMMANDS) >= 5


@pytest.mark.parametrize("command", COMMANDS)
def test_readme_command_runs(command, tmp_path):
    argv = [TRITONRL] + shlex.split(command)[1:]
    argv = [str(tmp_path / a) if a.startswith("out/") else a for a in argv]
    proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"{command}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
    assert proc.stdout.strip()


def test_readme_python_snippet_runs():
    snippet = next(body for lang, body in BLOCKS if lang == "python")
    solution = (ROOT / "src/tritonrl/tasks/bundled/solutions/l1_relu.py").read_text()
    namespace = {"model_output": f"Here it is:\n```python\n{solution}\n```"}
    exec(compile(snippet, "README.md", "exec"), namespace)  # noqa: S102 - our own README
    assert namespace["result"].correct


def test_readme_eval_example_shows_what_eval_prints(tmp_path):
    """The example output under "Using it" is `tritonrl eval`'s, line for line (in any order: verdicts land as they
    finish), with every number masked (times and the errors' values change from run to run, as the inputs do)."""
    command = next(c for c in COMMANDS if "--solutions examples/solutions" in c)
    argv = [TRITONRL] + [str(tmp_path / a) if a.startswith("out/") else a for a in shlex.split(command)[1:]]
    proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr

    def shape(text: str) -> list[str]:
        return sorted(re.sub(r"-?\d+(\.\d+)?(e[-+]?\d+)?", "N", line) for line in text.splitlines())

    example = USING.split("```text\n", 1)[1].split("```", 1)[0]
    assert shape(proc.stdout.replace(f"{tmp_path}/", "")) == shape(example)
