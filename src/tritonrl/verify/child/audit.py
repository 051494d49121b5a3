"""An audit hook (PEP 578) in the candidate's child: candidate code may not reach the harness's frames and objects.

    install(candidate_file)          # before the candidate is imported; it cannot be removed afterwards

The verdict does not rest on this: nothing that decides it lives in the child (the judge holds references,
future inputs, comparisons and the timing samples; docs/verifier.md). But the watch that does live here (the
monitor, the timers) is worth keeping out of reach, as a second line behind the static checks, which read
spellings: here the *event* is seen, however the code spelled it.

Refused when the candidate caused the event: the nearest frame (from the code that raised it outwards) that is
either the candidate's own (its ``co_filename``) or trusted code's (torch, Triton, this package) is the
candidate's; frames of any other code in between (a stdlib helper, code made by ``exec``) are bystanders, so
``logging.currentframe()``, ``typing.get_type_hints`` evaluating a string or ``os.fdopen`` count as the
candidate's own calls:
  - frames and the object graph: ``sys._getframe``, ``sys._current_frames``/``_current_exceptions``, generator,
    coroutine and traceback frames and code objects (``gi_frame``, ``tb_frame``, ``f_code``, ``__code__`` ...:
    CPython audits these reads as ``object.__getattr__``), ``gc.get_objects``/``get_referrers``/``get_referents``;
  - rewriting code and tracing: writes to ``__code__`` and other audited attributes, ``sys.settrace``,
    ``sys.setprofile``, building functions or code objects;
  - foreign code and processes: ``ctypes``, ``exec``/``compile``, ``os.system``/``exec``/``fork``/``kill``,
    ``subprocess``, sockets; imports of modules outside the static checks' allowlist.
Triton and torch raise some of these events on the candidate's behalf (Triton's JIT reads a kernel's
``__code__`` and compiles its launcher): their frames are not the candidate's, so they pass.

Files are decided by their path, not by the caller (``FilePolicy``): once the candidate's import has begun
(``candidate_started``), every file event of the process, torch's, Triton's or this package's frames included
(torch's datapipes listing ``/etc`` for a model's ``__init__``), may reach only the job's own directory (read and
write) and, to read, the libraries (``sys.path``, the interpreter's prefixes, ``/usr``, ``/lib*``) and a few
devices. Anything else is refused (the event raises) and remembered: ``install`` returns the reader of those
refusals, which the harness turns into the step's ``file_access`` failure (library code may swallow the error).

Limits: attribute reads CPython does not audit (``__closure__``/``cell_contents``, ``__globals__``, ``__self__``,
``f_back``) reach whatever a reachable function holds: the harness's launch wrappers live on Triton's classes, so
their closures are reachable this way (the static checks refuse these names; the monitor's findings that matter
are also checked where such a change cannot reach: written bytes against their shadows, outputs by the judge).
A callback the candidate hands to trusted code (a pre-run hook, a heuristic) that is a builtin or a library
object raises its events under trusted frames; for the events that hand out frames or the object graph
(``STACK_WIDE``, ``FRAME_ATTRS``) that is closed: any candidate frame on the stack makes them the candidate's, unless
this package raised them.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable

REFUSED = frozenset({
    "sys._getframe", "sys._getframemodulename", "sys._current_frames", "sys._current_exceptions",
    "gc.get_objects", "gc.get_referrers", "gc.get_referents", "gc.get_freeze_count",
    "object.__getattr__", "object.__setattr__", "object.__delattr__",
    "sys.settrace", "sys.setprofile", "sys.addaudithook", "function.__new__", "code.__new__",
    "ctypes.dlopen", "ctypes.dlsym", "ctypes.addressof", "ctypes.cdata", "ctypes.cdata/buffer",
    "ctypes.create_string_buffer", "ctypes.string_at", "ctypes.wstring_at", "ctypes.call_function",
    "exec", "compile", "builtins.breakpoint", "marshal.loads", "pickle.find_class",
    "os.system", "os.exec", "os.fork", "os.forkpty", "os.posix_spawn", "os.spawn", "os.kill", "os.killpg",
    "subprocess.Popen", "socket.__new__", "socket.connect", "socket.bind",
    "open", "os.open", "os.remove", "os.rename", "os.mkdir", "os.rmdir", "os.chmod", "os.chown", "os.truncate",
    "os.symlink", "os.link", "os.utime", "os.listdir", "os.scandir", "shutil.rmtree", "shutil.copyfile",
    "mmap.__new__", "sqlite3.connect", "urllib.Request", "webbrowser.open", "cpython.run_command",
})


# Events that hand out frames or the object graph: from there ``f_back`` and ``f_locals`` (reads CPython does not
# audit) lead to the harness's locals. For these, trusted code in between does not make the event its own: torch
# calling a builtin the candidate handed it (``torch.no_grad()(sys._getframe)(0)``, a red team's way to the
# monitor) is refused like the candidate's own call, unless this package's code raised the event.
STACK_WIDE = frozenset({"sys._getframe", "sys._getframemodulename", "sys._current_frames", "sys._current_exceptions",
                        "gc.get_objects", "gc.get_referrers", "gc.get_referents"})
FRAME_ATTRS = frozenset({"tb_frame", "gi_frame", "cr_frame", "ag_frame", "f_back"})


# Objects whose attributes no one but their maker reads or writes through an audited access (``__kwdefaults__``,
# ``__code__``, ``__defaults__``): the monitor's hooks, which hold it as a keyword-only default. Refused whoever
# asks, torch's wrappers included (``torch.no_grad()(getattr)(run, "__kwdefaults__")`` reached the monitor).
_PROTECTED: set[int] = set()


def protect(obj: object) -> None:
    """Refuse every audited attribute access to ``obj`` from now on (it is kept alive by its owner)."""
    _PROTECTED.add(id(obj))


class AuditRefusal(RuntimeError):
    """Candidate code did something the verifier's child refuses (the message names the event)."""


# File events and the arguments that are paths; ``open`` writes when its mode or flags say so.
FILE_READS = {"os.listdir": (0,), "os.scandir": (0,)}
FILE_WRITES = {"os.remove": (0,), "os.rename": (0, 1), "os.mkdir": (0,), "os.rmdir": (0,), "os.chmod": (0,),
               "os.chown": (0,), "os.truncate": (0,), "os.symlink": (0, 1), "os.link": (0, 1), "os.utime": (0,),
               "shutil.rmtree": (0,), "shutil.copyfile": (0, 1)}
DEVICES = ("/dev/null", "/dev/zero", "/dev/urandom", "/dev/random")

class FilePolicy:
    """Which paths the child's process may reach once candidate code has started: its own directory (``own``),
    and to read, the libraries (``readable``) and ``DEVICES``. Paths are resolved (``..``, links, the
    ``/proc/self/cwd`` the candidate is imported through) before they are judged."""

    def __init__(self, own: str, readable: tuple[str, ...]) -> None:
        self.own = os.path.realpath(own)
        self.readable = tuple(sorted({os.path.realpath(r) for r in readable if r}, key=len))

    @classmethod
    def for_child(cls, *extra: str | None) -> FilePolicy:
        """The child's: its working directory (the job's), and to read, where its modules come from and
        ``extra`` (the judge's Triton driver build on a GPU)."""
        roots = [sys.prefix, sys.base_prefix, sys.exec_prefix, "/usr", "/lib", "/lib64", "/lib32"]
        roots += [p for p in (*sys.path, *extra) if p and os.path.isabs(p)]
        return cls(os.getcwd(), tuple(roots))

    def refuses(self, event: str, args: tuple) -> str | None:
        """The path of ``event`` that lies outside what the process may reach, or None."""
        if event == "open":
            write = _opens_for_writing(args)
            where = (0,)
        elif event in FILE_READS:
            write, where = False, FILE_READS[event]
        elif event in FILE_WRITES:
            write, where = True, FILE_WRITES[event]
        else:
            return None
        for i in where:
            path = args[i] if i < len(args) else None
            if path is None or isinstance(path, int):  # the working directory, or a descriptor opened before
                continue
            if not self.allows(os.fsdecode(path), write):
                return os.fsdecode(path)
        return None

    def allows(self, path: str, write: bool) -> bool:
        real = os.path.realpath(path)
        if _under(real, self.own) or real == "/dev/null":
            return True
        return not write and (real in DEVICES or any(_under(real, root) for root in self.readable))


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _opens_for_writing(args: tuple) -> bool:
    mode = args[1] if len(args) > 1 else None
    flags = args[2] if len(args) > 2 and isinstance(args[2], int) else 0
    written = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
    return bool(isinstance(mode, str) and set(mode) & set("wax+")) or bool(flags & written)


def _trusted_roots() -> tuple[str, ...]:
    """Directories of the code whose events are its own business: torch, Triton, this package, and the two
    stdlib modules that build code for their callers from checked names (``collections.namedtuple``,
    ``dataclasses``)."""
    import collections
    import dataclasses
    import os

    import torch
    import triton

    roots = [os.path.dirname(m.__file__) + os.sep for m in (torch, triton)] + [_own_root()]
    return (*roots, collections.__file__, dataclasses.__file__)


def _own_root() -> str:
    """tritonrl/verify/, found without importing the parent's API."""
    import os

    return os.path.dirname(os.path.dirname(__file__)) + os.sep


def install(candidate_file: str, allowed_imports: frozenset[str] | None = None,
            files: FilePolicy | None = None) -> tuple[Callable[[], None], Callable[[], list[str]]]:
    """Add the hook. ``allowed_imports``: top-level module names candidate code may import (others are refused).

    An event is judged by the *nearest caller that is not a bystander*: walking out from the code that raised it,
    the first frame that is either the candidate's (refused) or trusted code's (allowed: torch, Triton, this
    package). Frames of other code (the stdlib, numpy, code made by ``exec``) are bystanders: ``logging`` walking
    frames, ``typing`` evaluating a string, ``os.fdopen`` opening a file, all for the candidate, are the
    candidate's doing.

    Returns ``(candidate_started, refused_files)``: the harness calls the first as the candidate's import begins;
    from then on every file event is judged by ``files`` (``FilePolicy``), whoever raised it, and the second lists
    the paths refused so far."""
    busy = threading.local()
    started: list[bool] = []
    refused: list[str] = []
    getframe = sys._getframe
    trusted, own = _trusted_roots(), _own_root()
    verdicts: dict[str, bool | None] = {candidate_file: True}  # filename -> candidate (True), trusted (False)

    def decider(filename: str) -> bool | None:
        verdict = verdicts.get(filename, 0)
        if verdict == 0:
            verdict = False if filename.startswith(trusted) else None
            verdicts[filename] = verdict
        return verdict

    def candidate_caused(stack_wide: bool) -> bool:
        frame = getframe(2)
        deferred = False  # torch or Triton raised a stack-wide event: the candidate's if its frame is nearer out
        while frame is not None:
            code = frame.f_code
            if code.co_filename == candidate_file:
                return True
            if deferred or decider(code.co_filename) is False:
                # trusted code; for a stack-wide event it is the caller's only if it is this package (the harness's
                # own frame walk, the front-end check compiling a kernel) or a module's import-time code (Triton
                # importing on a first launch)
                if not stack_wide or code.co_filename.startswith(own) or code.co_name == "<module>":
                    return False
                deferred = True
            frame = frame.f_back
        return False

    def hook(event: str, args: tuple) -> None:
        if event not in REFUSED and event != "import":
            return
        if getattr(busy, "on", False):
            return
        busy.on = True
        try:
            if event.startswith("object.") and args and id(args[0]) in _PROTECTED:
                name = args[1] if len(args) > 1 else "?"
                raise AuditRefusal(f"{event} ({name!r}) of the verifier's hooks is not allowed: it can reach the harness")
            if started and files is not None:
                outside = files.refuses(event, args)
                if outside is not None:
                    if len(refused) < 8:
                        refused.append(f"{event} {outside!r}")
                    raise AuditRefusal(f"{event} of {outside!r} is not allowed: once the candidate has started, the "
                                       "process may reach only its own directory and, to read, its libraries")
            stack_wide = event in STACK_WIDE or (event == "object.__getattr__" and len(args) > 1
                                                 and args[1] in FRAME_ATTRS)
            if not candidate_caused(stack_wide):
                return
            if event == "import":
                name = str(args[0]) if args else ""
                if allowed_imports is None or name.split(".")[0] in allowed_imports:
                    return
                raise AuditRefusal(f"import of {name!r} is not allowed in a candidate")
            detail = f" ({args[1]!r})" if event.startswith("object.") and len(args) > 1 else ""
            raise AuditRefusal(f"{event}{detail} is not allowed in candidate code: it can reach the harness")
        finally:
            busy.on = False

    sys.addaudithook(hook)
    return (lambda: started.append(True)), (lambda: list(refused))
