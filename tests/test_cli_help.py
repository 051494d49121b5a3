"""The command line as a user meets it: help texts written for users (no developer docstrings), and a closed pipe
(``tritonrl tasks list ... | head``) ends a command quietly instead of in a traceback."""

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tritonrl.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]
DEVELOPER = ("``", "tritonrl.cli", "thin wrapper", "docstring", "Also home of")


def parsers(parser: argparse.ArgumentParser, name: str = "tritonrl"):
    yield name, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub, child in action.choices.items():
                yield from parsers(child, f"{name} {sub}")


@pytest.mark.parametrize("name,parser", list(parsers(build_parser())), ids=lambda v: v if isinstance(v, str) else "")
def test_help_is_written_for_users(name, parser):
    text = parser.format_help()
    assert not [word for word in DEVELOPER if word in text], f"{name} --help:\n{text}"


def test_eval_help_opens_with_what_it_does():
    (_, parser), = [(n, p) for n, p in parsers(build_parser()) if n == "tritonrl eval"]
    description = parser.description.splitlines()
    assert description[0].startswith("Judge Triton kernels")
    assert "--json" in parser.format_help() and "--tolerance {strict,kernelbench}" in parser.format_help()


@pytest.mark.parametrize("command", [["tasks", "list", "bundled"], ["config", "show"], ["prompt", "l1_relu"]])
def test_a_closed_pipe_ends_the_command_quietly(command):
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    proc = subprocess.Popen([sys.executable, "-m", "tritonrl", *command], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env)
    proc.stdout.close()  # the reader is gone before anything is written, as `| head` is once it has its lines
    stderr = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141 and stderr == ""
