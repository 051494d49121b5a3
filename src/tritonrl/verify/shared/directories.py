"""Where the verifier keeps things on this machine: every job's working directory, and the reference timings.

    jobs_root()            # the parent makes each child's directory here; a child's view never shows it whole
    default_cache_dir()    # the judge's signed reference timings when ``VerifyConfig.cache_dir`` is not set

Both are per user, under the system's temporary directory. The parent, the zygote and the judge each need them, so
they live here rather than on one side.
"""

import os
import tempfile


def jobs_root() -> str:
    """The one directory holding every child's working directory: hidden from candidates as a whole."""
    root = os.path.join(tempfile.gettempdir(), f"tritonrl-jobs-{os.getuid()}")
    os.makedirs(root, mode=0o700, exist_ok=True)
    return root


def default_cache_dir() -> str:
    """The reference timings' directory (``tritonrl.verify.judge.reference_timings``) unless configured."""
    return os.path.join(tempfile.gettempdir(), f"tritonrl-refcache-{os.getuid()}")
