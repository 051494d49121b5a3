"""An audit hook (PEP 578) in the candidate's child: candidate code may not reach the harness's frames and objects.

    install(candidate_file)          # before the candidate is imported; it cannot be removed afterwards

The verdict does not rest on this: nothing that decides it lives in the child (the judge holds references,
future inputs, comparisons and the timing samples; docs/verifier.md). But the watch that does live here (the
monitor, the timers) is worth keeping out of reach, as a second line behind the static checks, which read
spellings: here the *event* is seen, however the code spelled it.

Refused when the code that raises the event is the candidate's own (its frames' ``co_filename``):
  - frames and the object graph: ``sys._getframe``, ``sys._current_frames``/``_current_exceptions``, generator,
    coroutine and traceback frames and code objects (``gi_frame``, ``tb_frame``, ``f_code``, ``__code__`` ...:
    CPython audits these reads as ``object.__getattr__``), ``gc.get_objects``/``get_referrers``/``get_referents``;
  - rewriting code and tracing: writes to ``__code__`` and other audited attributes, ``sys.settrace``,
    ``sys.setprofile``, building functions or code objects;
  - foreign code and processes: ``ctypes``, ``exec``/``compile``, ``os.system``/``exec``/``fork``/``kill``,
    ``subprocess``, sockets; imports of modules outside the static checks' allowlist.
Triton and torch raise some of these events on the candidate's behalf (Triton's JIT reads a kernel's
``__code__`` and compiles its launcher): their frames are not the candidate's, so they pass.

Limits: an event raised by library code the candidate calls (a stdlib helper that walks frames for it) is judged
by that helper's frame; the static checks keep such modules out (``inspect``, ``traceback``, ``gc``, ``sys``
attributes). Attribute reads CPython does not audit (``f_back``, ``f_globals``, ``__globals__``) need a frame or
function to start from, which the audited events above guard.
"""

from __future__ import annotations

import sys
import threading

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


class AuditRefusal(RuntimeError):
    """Candidate code did something the verifier's child refuses (the message names the event)."""


def install(candidate_file: str, allowed_imports: frozenset[str] | None = None) -> None:
    """Add the hook. ``allowed_imports``: top-level module names candidate code may import (others are refused)."""
    busy = threading.local()
    getframe = sys._getframe

    def hook(event: str, args: tuple) -> None:
        if event not in REFUSED and event != "import":
            return
        if getattr(busy, "on", False):
            return
        busy.on = True
        try:
            frame = getframe(1)
            if frame is None or frame.f_code.co_filename != candidate_file:
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
