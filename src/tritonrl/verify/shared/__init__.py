"""What the parent, the zygote, the judge and the candidate's child share: mechanics and types, no verdicts.

    wire.py             messages between the processes (length-prefixed JSON, file descriptors, seals)
    arena.py            the memory a judge shares with one child
    trial.py            a correctness trial, and how both sides build the same model and inputs
    verdict.py          ``VerifyResult`` and ``Stage``: what a verification ends in
    flags.py            named reasons, each with its rationale
    environment.py      the allow-listed environments of the zygote and the child
    directories.py      where jobs and the reference timings live on this machine
    protections.py      what each protection a verdict reports rests on
    device_memory.py    whether a step ran out of device memory (the batch's doing: run again, alone)
    timing_protocol.py  the timing protocol (``time_calls``) and the timed region (``CudaTimer``)
    timing_stats.py     the protocol's pure statistics (medians, intervals, speedups)
    stopwatch.py        seconds per named step, for diagnosis only

Nothing here imports the parent, the zygote, the judge or the child (``verify-*`` in ``pyproject.toml``).
"""
