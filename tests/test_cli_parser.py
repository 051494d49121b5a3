"""Every ``tritonrl`` parser: no abbreviated options, and an unknown option named in one line with its nearest match
(exit 2), before argparse's "one of the arguments ... is required" could hide it."""

import pytest

from tests.test_cli_help import parsers
from tritonrl.cli import build_parser, main


def test_no_parser_accepts_abbreviations():
    found = list(parsers(build_parser()))
    assert len(found) > 10
    assert [name for name, parser in found if parser.allow_abbrev] == []


@pytest.mark.parametrize("argv,line", [
    (["verify", "--task", "l1_relu", "--solutons", "x.py"],
     "tritonrl: error: unknown option --solutons for tritonrl verify (did you mean --solution?)"),
    (["eval", "--solutons", "x", "--out", "y"],
     "tritonrl: error: unknown option --solutons for tritonrl eval (did you mean --solutions?)"),
    (["verify", "--task", "l1_relu", "--sol", "x.py"],  # an abbreviation: refused, and what it was short for
     "tritonrl: error: unknown option --sol for tritonrl verify (did you mean --solution?)"),
    (["tasks", "list", "bundled", "--jsn"],
     "tritonrl: error: unknown option --jsn for tritonrl tasks list (did you mean --json?)"),
    (["config", "show", "--comment"],
     "tritonrl: error: unknown option --comment for tritonrl config show (did you mean --comments?)"),
    (["--vrsion"], "tritonrl: error: unknown option --vrsion for tritonrl (did you mean --version?)"),
    (["verify", "--task", "l1_relu", "--solution", "x.py", "--zzzzzz=1"],
     "tritonrl: error: unknown option --zzzzzz for tritonrl verify (tritonrl verify --help lists the options)"),
])
def test_an_unknown_option_is_one_line_naming_it_and_its_nearest_match(argv, line, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    assert capsys.readouterr().err == line + "\n"


def test_values_that_look_like_options_are_left_to_argparse(capsys):
    # a negative number is a value: the command's own check answers it
    assert main(["verify", "--task", "l1_relu", "--timeout", "-1", "--solution", "x.py"]) == 2
    assert capsys.readouterr().err == "tritonrl: error: --timeout must be positive\n"
    args = build_parser().parse_args(["config", "show", "--set=rl.steps=2"])
    assert args.overrides == ["rl.steps=2"]
