"""Errors a user can cause (bad path, unknown task, malformed config).

The CLI prints these as one line and exits with status 2 (``Stopped``: 143, or 130 for Ctrl-C); any other
exception is our bug and
keeps its traceback.
"""


class UserError(Exception):
    """A mistake in the user's input, reported as one line without a traceback."""


class TaskError(UserError):
    """A task source or task file that cannot be found, read or understood."""


class ConfigError(UserError):
    """A config file or option that is missing, malformed or inconsistent."""


class Interrupted(KeyboardInterrupt):
    """Ctrl-C, caught where there is something to say (what was kept, how to resume): the CLI prints the message
    once, as ``tritonrl: <message>``, and exits 130."""


class Stopped(UserError):
    """SIGTERM or SIGINT asked a long job (evaluation, task generation) to stop, and it stopped at a safe point: what
    it finished is on disk and running it again resumes. The message says how far it got, then ``hint`` (how to
    resume; a caller that knows better, such as ``tritonrl eval``, replaces it); ``reason`` is the signal's name.
    The CLI prints it as one line and exits 143 (130 when the reason is SIGINT: Ctrl-C), as a training stage
    stopped by a signal does."""

    def __init__(self, message: str, reason: str | None = None, hint: str = "run again to resume"):
        super().__init__(message)
        self.message, self.reason, self.hint = message, reason, hint

    def __str__(self) -> str:
        return f"{self.message}; {self.hint}"
