"""The argument parser of every ``tritonrl`` command: no abbreviations, and a typo named in one line.

    tritonrl verify --task l1_relu --solutons x.py
    tritonrl: error: unknown option --solutons for tritonrl verify (did you mean --solution?)

argparse accepts any unambiguous prefix of an option (``--sol`` for ``--solution``), so a later option can change
what an old command line means; ``allow_abbrev=False`` turns that off. And argparse reports an unknown option
only after every other check, so a typo in a required option was answered with the whole usage and "one of the
arguments ... is required"; ``Parser`` looks for unknown options first and names the nearest known one
(one it abbreviates, else ``difflib.get_close_matches``). Subparsers are made by the same class (argparse's ``add_subparsers`` default).
"""

from __future__ import annotations

import argparse
import difflib
import re
import sys
from typing import NoReturn

_NEGATIVE_NUMBER = re.compile(r"^-\d+$|^-\d*\.\d+$")  # a value, not an option (argparse's rule)


class Parser(argparse.ArgumentParser):
    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def parse_known_args(self, args=None, namespace=None):
        arguments = list(sys.argv[1:] if args is None else args)
        unknown = self._unknown_option(arguments)
        if unknown is not None:
            self.typo(unknown)
        return super().parse_known_args(arguments, namespace)

    def _unknown_option(self, arguments: list[str]) -> str | None:
        """The first option among ``arguments`` that this parser does not know, up to its subcommand (whose own
        parser checks the rest) or ``--``."""
        commands = {name for action in self._actions if isinstance(action, argparse._SubParsersAction)
                    for name in action.choices}
        for token in arguments:
            if token == "--" or token in commands:
                return None
            if not token.startswith("-") or token == "-" or _NEGATIVE_NUMBER.match(token):
                continue
            name = token.split("=", 1)[0] if token.startswith("--") else token
            if name not in self._option_string_actions:
                return name
        return None

    def typo(self, option: str) -> NoReturn:
        """One line naming the unknown ``option`` and the nearest known one; exit 2."""
        known = [o for o in self._option_string_actions if o.startswith("--")]
        longer = [o for o in known if o.startswith(option)]  # an abbreviation: what it was short for
        match = longer[:3] or difflib.get_close_matches(option, known, n=1, cutoff=0.6)
        hint = f"did you mean {' or '.join(match)}?" if match else f"{self.prog} --help lists the options"
        self.exit(2, f"tritonrl: error: unknown option {option} for {self.prog} ({hint})\n")
