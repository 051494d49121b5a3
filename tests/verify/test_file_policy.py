"""Files are decided by their path once the candidate has started (``child/audit.py``, ``FilePolicy``): the job's
own directory, and to read, the libraries and a few devices; whoever asks."""

import os

from tritonrl.verify.child.audit import FilePolicy


def test_the_job_directory_is_read_and_written_libraries_only_read(tmp_path):
    job, lib = tmp_path / "job", tmp_path / "lib"
    job.mkdir()
    lib.mkdir()
    policy = FilePolicy(str(job), (str(lib),))
    assert policy.refuses("open", (str(job / "out.txt"), "w", os.O_WRONLY | os.O_CREAT)) is None
    assert policy.refuses("os.listdir", (str(job),)) is None
    assert policy.refuses("open", (str(lib / "m.py"), "r", os.O_RDONLY)) is None
    assert policy.refuses("open", (str(lib / "m.py"), "r+", os.O_RDWR)) == str(lib / "m.py")
    assert policy.refuses("os.remove", (str(lib / "m.py"),)) == str(lib / "m.py")
    assert policy.refuses("os.rename", (str(job / "a"), str(lib / "b"))) == str(lib / "b")
    assert policy.refuses("open", ("/dev/null", "w", os.O_WRONLY)) is None
    assert policy.refuses("open", ("/dev/urandom", "rb", os.O_RDONLY)) is None
    assert policy.refuses("open", ("/dev/urandom", "wb", os.O_WRONLY)) is not None  # other devices: read only


def test_elsewhere_is_refused_even_through_the_job_directory(tmp_path):
    job = tmp_path / "job"
    job.mkdir()
    (job / "etc").symlink_to("/etc")
    policy = FilePolicy(str(job), ("/usr",))
    assert policy.refuses("os.scandir", ("/etc",)) == "/etc"
    assert policy.refuses("open", ("/proc/self/status", "r", os.O_RDONLY)) == "/proc/self/status"
    assert policy.refuses("open", (str(job / ".." / "other" / "x"), "r", 0)) is not None
    assert policy.refuses("os.listdir", (str(job / "etc"),)) is not None  # a link out is judged where it leads
    assert policy.refuses("open", (3, "r", 0)) is None  # a descriptor opened (and judged) before
    assert policy.refuses("sys._getframe", ()) is None  # not a file event: the hook's other rules decide
