"""What each protection a verdict reports rests on: the fields of a child's isolation report, all True for it to hold.

    missing_protections(report, ["filesystem", "network"])   # those a child's report does not show

The child fills the report (``tritonrl.verify.child.isolation.IsolationReport``); the parent reads it back from
the verdict's facts and decides whether a child missing a protection may still be judged (``VerifyConfig.sandbox``).
"""

PROTECTIONS = {
    "processes": ("seccomp",),                        # no fork, exec or clone of a process
    "native_code": ("seccomp", "noexec"),             # no executable memory it wrote, no library it wrote
    "proc_mem": ("seccomp", "unprivileged"),          # no /proc/self/mem, ptrace, process_vm_*
    "environment": ("env_scrubbed",),                 # an allow-listed environment, not the parent's
    "filesystem": ("fs_isolated", "readonly", "pid_isolated"),  # its own view of files and processes
    "privileges": ("unprivileged", "caps_dropped", "no_new_privs"),
    "network": ("network_isolated",),
}


def missing_protections(report: dict, required: list[str]) -> list[str]:
    """The ``required`` protections a child's report (``IsolationReport.to_dict``) does not show."""
    return [name for name in required if not all(report.get(f) for f in PROTECTIONS[name])]
