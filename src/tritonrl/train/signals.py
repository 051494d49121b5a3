"""Graceful stop: SIGTERM/SIGINT (or a pre-emption notice) make the trainer save a checkpoint and stop.

A signal handler cannot save a model safely mid-step, so it only sets a flag; ``StopCallback`` sees it at the
end of the current step and sets ``control.should_save`` and ``control.should_training_stop``, so the trainer
writes a normal checkpoint (then our ``COMPLETE`` marker) and returns. A second signal restores the default
handler's behaviour (exit at once), for a user who really wants out.
"""

from __future__ import annotations

import signal
import threading
from typing import Self

from transformers import TrainerCallback


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


class StopCallback(TrainerCallback):
    """Turn a raised ``StopRequest`` into save-and-stop at the next step boundary."""

    def __init__(self, request: StopRequest):
        self.request = request

    def on_step_end(self, args, state, control, **kwargs):
        if self.request.is_set():
            control.should_save = True
            control.should_training_stop = True
        return control


class SignalHandlers:
    """Context manager installing SIGTERM/SIGINT handlers that raise ``request`` (main thread only)."""

    SIGNALS = (signal.SIGTERM, signal.SIGINT)

    def __init__(self, request: StopRequest):
        self.request = request
        self._previous: dict[int, object] = {}

    def _handle(self, signum, frame):
        if self.request.is_set():
            signal.signal(signum, self._previous.get(signum, signal.SIG_DFL))
            signal.raise_signal(signum)
            return
        self.request.set(signal.Signals(signum).name)

    def __enter__(self) -> Self:
        if threading.current_thread() is threading.main_thread():
            for signum in self.SIGNALS:
                self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(self, *exc) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous.clear()
