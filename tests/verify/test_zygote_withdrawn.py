"""A candidate's fork whose job directory is gone (its verifier was interrupted and cleaned up first) exits quietly:
before, Ctrl-C on ``tritonrl verify`` over a directory printed the queued forks' ``chdir`` tracebacks."""

import os
import socket

from tritonrl.verify.zygote import run_fork


def test_a_withdrawn_candidate_fork_exits_without_a_traceback(tmp_path):
    job = {"kind": "candidate", "workdir": str(tmp_path / "gone"), "spec": {}, "limits": {}}
    read_end, write_end = os.pipe()
    sock, control = socket.socketpair()
    pid = os.fork()
    if pid == 0:  # the fork, as the zygote makes it: its stderr into the pipe
        os.close(read_end)
        os.dup2(write_end, 2)
        run_fork(job, sock, control)  # never returns
    os.close(write_end)
    _, status = os.waitpid(pid, 0)
    err = os.read(read_end, 65536).decode()
    os.close(read_end)
    sock.close()
    control.close()
    assert os.WEXITSTATUS(status) == 3 and "Traceback" not in err, err
