"""What outlives an interrupted verifier ends quietly: a candidate's fork whose job directory is gone, a judge whose
salt never came, the zygote whose answer has no reader. Before, Ctrl-C on ``tritonrl verify`` over a directory
printed their tracebacks (the last two in a clean CI run, ``test_cli_stream``)."""

import os
import socket

from tritonrl.verify.zygote import run_fork


def _fork_run(job: dict, sock: socket.socket) -> tuple[int, str]:
    """``run_fork(job, sock, ...)`` in a fork, as the zygote makes it: its exit code and what it wrote to stderr."""
    read_end, write_end = os.pipe()
    control, other = socket.socketpair()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        os.dup2(write_end, 2)
        run_fork(job, sock, control)  # never returns
    os.close(write_end)
    _, status = os.waitpid(pid, 0)
    err = os.read(read_end, 65536).decode()
    os.close(read_end)
    control.close()
    other.close()
    return os.WEXITSTATUS(status), err


def test_a_withdrawn_candidate_fork_exits_without_a_traceback(tmp_path):
    job = {"kind": "candidate", "workdir": str(tmp_path / "gone"), "spec": {}, "limits": {}}
    sock, peer = socket.socketpair()
    code, err = _fork_run(job, sock)
    sock.close()
    peer.close()
    assert code == 3 and "Traceback" not in err, err


def test_a_judge_whose_verifier_left_before_the_salt_exits_without_a_traceback():
    """Ctrl-C on ``tritonrl verify`` can close a verifier while its judge's fork is starting: the judge then finds its
    socket closed where the salt should come. Nobody is left to report to (a clean CI run printed this traceback)."""
    parent_end, judge_end = socket.socketpair()
    parent_end.close()  # the verifier is gone before it sent the salt
    code, err = _fork_run({"kind": "judge", "spec": {}, "env": {}}, judge_end)
    judge_end.close()
    assert code == 0 and "Traceback" not in err, err


def test_the_zygote_whose_verifier_left_mid_reply_exits_without_a_traceback(tmp_path):
    """The zygote answers each job with its fork's pid; a verifier closed just after asking (a Ctrl-C) leaves that
    answer nowhere to go. The zygote then ends as it does when its verifier closes: quietly, its forks killed."""
    import subprocess
    import sys

    from tritonrl.verify.shared import wire

    ours, theirs = socket.socketpair()
    err = tmp_path / "zygote.err"
    with err.open("w") as stream:
        proc = subprocess.Popen([sys.executable, "-m", "tritonrl.verify.zygote", "--fd", str(theirs.fileno())],
                                pass_fds=[theirs.fileno()], stderr=stream, start_new_session=True)
    theirs.close()
    assert wire.recv(ours, timeout_s=120)[0].get("ready")
    judge_end, parent_end = socket.socketpair()
    wire.send(ours, {"kind": "judge", "id": 1, "spec": {}, "env": {}}, fds=[judge_end.fileno()])
    judge_end.close()
    parent_end.close()  # the verifier is gone: no salt for the judge, no one to read the zygote's answer
    ours.close()
    assert proc.wait(timeout=60) == 0
    assert "Traceback" not in err.read_text(), err.read_text()
