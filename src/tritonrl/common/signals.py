"""Graceful stop: SIGTERM/SIGINT (or a pre-emption notice) make the trainer save a checkpoint and stop.

A signal handler cannot save a model safely mid-step, so it only sets a flag; ``StopCallback`` sees it at the
end of the current step and sets ``control.should_save`` and ``control.should_training_stop``, so the trainer
writes a normal checkpoint (then our ``COMPLETE`` marker) and returns. A second signal restores the default
handler's behaviour (exit at once), for a user who really wants out.

Several processes (``accelerate launch``): each rank has its own flag (a signal, a pre-emption notice), and a
rank that stopped alone would leave the others waiting in the next collective. So the decision is shared:
``agree(request)`` all-reduces the flags at every step end (``tritonrl.common.ranks.any_rank``); when any rank
asks, every rank raises its own request (reason ``"<reason> (rank N)"``) and all stop after the same step.

Evaluation (``tritonrl.evaluation.evaluate``, ``tritonrl.evaluation.refinement``) and task generation (``tritonrl.taskgen``) use
the same ``SignalHandlers`` + ``StopRequest``: they look at the flag at their own safe points (after a generate
call, after a verdict) and raise ``tritonrl.errors.Stopped``. Either way the command exits 130 when Ctrl-C
(SIGINT) asked and 143 when SIGTERM or a pre-emption did (``exit_status``): both mean "run again to resume". ``StopCallback`` (transformers' ``TrainerCallback``)
is built on first use, so they do not import the training stack.
"""

from __future__ import annotations

import os
import signal
import threading
from typing import Self

EXIT_STOPPED = 143  # 128 + SIGTERM: stopped by SIGTERM or a pre-emption at a safe point; run again to resume
EXIT_INTERRUPTED = 130  # 128 + SIGINT: Ctrl-C, as the shell reports a process that Ctrl-C ended


def exit_status(reason: str | None) -> int:
    """A job stopped for ``reason`` (a ``StopRequest``'s: ``SIGINT``, ``SIGTERM``, ``preempted``, with
    `` (rank N)`` when another rank asked) exits 130 for Ctrl-C, as a shell reports SIGINT, else 143."""
    return EXIT_INTERRUPTED if (reason or "").startswith(signal.Signals.SIGINT.name) else EXIT_STOPPED


class StopRequest:
    """A thread-safe flag with the reason it was raised (``SIGTERM``, ``preempted``, ...)."""

    def __init__(self):
        self._event = threading.Event()
        self.reason: str | None = None

    def set(self, reason: str) -> None:
        if not self._event.is_set():
            self.reason = reason
        self._event.set()

    def is_set(self) -> bool:
        return self._event.is_set()


def agree(request: StopRequest) -> bool:
    """Whether any rank's request is raised; if so, raise it on every rank. Every rank must call it together."""
    from tritonrl.common import ranks

    if not ranks.any_rank(request.is_set()):
        return False
    reasons = ranks.gather([request.reason if request.is_set() else None])
    first = next((i, r) for i, r in enumerate(reasons) if r is not None)
    if not request.is_set():
        request.set(f"{first[1]} (rank {first[0]})")
    return True


class SignalHandlers:
    """Context manager installing SIGTERM/SIGINT handlers that raise ``request`` (main thread only).

    ``notice``: what the job does now (``"stopping after the verdicts under way"``), said on stderr in one line
    when the first signal comes, with how to stop at once; a second signal gets the handler that was there before
    (Ctrl-C: ``KeyboardInterrupt``; SIGTERM: the default, which ends the process)."""

    SIGNALS = (signal.SIGTERM, signal.SIGINT)

    def __init__(self, request: StopRequest, notice: str | None = None):
        self.request = request
        self.notice = notice
        self._previous: dict[int, object] = {}

    def _handle(self, signum, frame):
        if self.request.is_set():
            signal.signal(signum, self._previous.get(signum, signal.SIG_DFL))
            signal.raise_signal(signum)
            return
        self.request.set(signal.Signals(signum).name)
        if self.notice:
            _say(f"tritonrl: {self.request.reason}: {self.notice}; "
                 f"{'Ctrl-C again' if signum == signal.SIGINT else 'a second SIGTERM'} stops at once")

    def __enter__(self) -> Self:
        if threading.current_thread() is threading.main_thread():
            for signum in self.SIGNALS:
                self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(self, *exc) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous.clear()


def _say(line: str) -> None:
    """One line on stderr from a signal handler: written straight to the descriptor (the interrupted code may be
    inside a write to ``sys.stderr``, which is not reentrant); on a terminal it first clears a progress bar's line."""
    clear = "\r\x1b[K" if os.isatty(2) else ""
    try:
        os.write(2, f"{clear}{line}\n".encode())
    except OSError:
        pass


def _stop_callback_class() -> type:
    from transformers import TrainerCallback

    class StopCallback(TrainerCallback):
        """Turn a raised ``StopRequest`` (on any rank) into save-and-stop at the next step boundary, on all ranks."""

        def __init__(self, request: StopRequest):
            self.request = request

        def on_step_end(self, args, state, control, **kwargs):
            if agree(self.request):
                control.should_save = True
                control.should_training_stop = True
            return control

    StopCallback.__module__, StopCallback.__qualname__ = __name__, "StopCallback"
    return StopCallback


def __getattr__(name: str):
    """``StopCallback``, built (importing transformers) the first time it is asked for."""
    if name == "StopCallback":
        globals()[name] = _stop_callback_class()
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
