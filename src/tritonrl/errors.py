"""Errors a user can cause (bad path, unknown task, malformed config).

The CLI prints these as one line and exits with status 2; any other exception is our bug and keeps its traceback.
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
