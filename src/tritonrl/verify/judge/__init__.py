"""The judge: one trusted process per GPU (one on a CPU) that decides verdicts and never imports candidate code.

    server.py             the process: sessions in, facts out; shared state (references, timings, the lock)
    session.py            one candidate: its child's calls, the checks
    timing_run.py         the candidate's timing run (after every correctness trial passed) and the clock check
    references.py         references and inputs on the judge's device (LRU), fresh inputs for timed calls
    reference_timings.py  the reference's timings, in memory and signed on disk
    compare.py            the comparison (tolerances, relative L2, input mutation), on the device
    gpu_lock.py           shared GPU work, exclusive timing (across processes too)

It imports nothing of the child, the parent, the zygote or the static checks (``verify-*`` in ``pyproject.toml``).
"""
