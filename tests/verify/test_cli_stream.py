"""``tritonrl verify`` over a directory: verdicts stream as they finish, Ctrl-C keeps them and stops at once."""

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from tests.verify.tasks import TASKS

ROOT = Path(__file__).resolve().parents[2]
GOOD = (Path(__file__).parent / "fixtures" / "runtime" / "good_relu.py").read_text()
HANG = GOOD.replace("        x = x.contiguous()\n", "        while x.numel() > 0:\n            x = x.contiguous()\n")


def _lines(stream, out: queue.Queue) -> None:
    for line in stream:
        out.put(line)
    out.put(None)


def test_sigint_keeps_finished_verdicts_and_stops_promptly(tmp_path):
    task = tmp_path / "relu_task.py"
    task.write_text(TASKS["relu"].source)
    cands = tmp_path / "cands"
    cands.mkdir()
    (cands / "a_good.py").write_text(GOOD)
    for name in ("b_hang.py", "c_hang.py", "d_hang.py"):
        (cands / name).write_text(HANG)
    (cands / "e_latin1.py").write_bytes(b"# caf\xe9\n" + GOOD.encode())  # not UTF-8: its own error
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    proc = subprocess.Popen([sys.executable, "-m", "tritonrl", "verify", "--task", str(task), "--solution",
                             str(cands), "--json", "--device", "cpu", "--timeout", "120"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path)
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=_lines, args=(proc.stdout, lines), daemon=True).start()
    seen = []
    try:
        deadline = time.monotonic() + 120
        while not any("a_good.py" in line for line in seen):
            seen.append(lines.get(timeout=max(0.1, deadline - time.monotonic())))
            assert seen[-1] is not None, proc.stderr.read()
        start = time.monotonic()
        proc.send_signal(signal.SIGINT)
        rc = proc.wait(timeout=30)
        stopped_s = time.monotonic() - start
    finally:
        if proc.poll() is None:
            proc.kill()
    while (line := lines.get(timeout=5)) is not None:
        seen.append(line)
    rows = [json.loads(line) for line in seen]
    verdicts = {Path(r["file"]).name: r for r in rows if "file" in r}
    assert rc == 130 and stopped_s < 20  # the hanging candidates were killed, not waited for (timeout 120 s)
    assert verdicts["a_good.py"]["correct"] is True
    assert "not UTF-8" in verdicts["e_latin1.py"]["error"] and verdicts["e_latin1.py"]["correct"] is False
    assert not {"b_hang.py", "c_hang.py", "d_hang.py"} & set(verdicts)
    summary = rows[-1]["summary"]
    assert summary["interrupted"] is True and summary["judged"] == 2 and len(summary["not_judged"]) == 3
    err = proc.stderr.read()
    assert "interrupted: 2 of 5 verdicts printed above" in err
    assert not any(word in err for word in ("died", "GPU", "Traceback")), err  # the stop was asked for: no death
