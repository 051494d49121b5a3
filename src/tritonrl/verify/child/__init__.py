"""The candidate's child: untrusted once the candidate is imported; it holds nothing that decides a verdict.

    isolation.py    namespaces, read-only mounts, an unprivileged user, no capabilities (before anything runs)
    harness.py      the calls it answers for its judge: import, build, run (watched), timed regions
    monitor.py      what a forward did: Triton launches, torch ops, values read into Python, byte provenance
    audit.py        an audit hook: candidate code may not reach frames, the object graph or foreign code
    interpreter.py  what Triton's CPU interpreter lacks, and its differences from a GPU

It imports nothing of the judge, the parent, the zygote or the static checks (``verify-*`` in ``pyproject.toml``):
what it shares with them is in ``tritonrl.verify.shared``.
"""
