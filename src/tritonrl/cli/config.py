"""``tritonrl config``: print the resolved config, or check config files before a run is launched.

    tritonrl config show [--config configs/smoke.yaml] [--set rl.steps=3] [--comments]   # YAML on stdout
    tritonrl config validate configs/*.yaml                                              # exit 0, or 2

``show`` prints what a run would use (defaults <- YAML <- ``--set``); ``--comments`` adds each key's help text.
``validate`` checks every file (duplicate keys, types, choices, ranges, cross-field rules; ``tritonrl.config``)
and prints one line per problem, every problem of every file. Also home of the helpers that let other commands expose config keys as flags, with the
type, choices and help of the dataclass field (one declaration, as HfArgumentParser does).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import types
import typing

from tritonrl.config import PipelineConfig, config_field, load_config, validate_file


# ---------------------------------------------------------------- config keys as flags (shared by train, pipeline)
def add_config_arguments(parser: argparse.ArgumentParser, flags: dict[str, str], config_required: bool = True,
                         set_example: str = "rl.steps=10", schema: type = PipelineConfig) -> None:
    """``--config``, ``--set`` and one flag per ``{flag: dotted key}``, typed and documented from the field."""
    parser.add_argument("--config", required=config_required, help="YAML file (see configs/)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help=f"override a config value, e.g. --set {set_example} (repeatable; "
                             "`tritonrl config show --comments` lists every key)")
    for flag, key in flags.items():
        add_field_flag(parser, flag, key, schema=schema)


def add_field_flag(parser: argparse.ArgumentParser, flag: str, key: str, note: str = "",
                   schema: type = PipelineConfig) -> None:
    """A flag for config key ``key`` of ``schema``: choices from a Literal, store_true for a bool, help from the
    metadata (then ``note``, for what the flag does beyond the key)."""
    f, hint = config_field(schema, key)
    help_text = f"{f.metadata.get('help', '')}{note} (config key {key})".strip()
    dest = _dest(key)
    if hint is bool:
        parser.add_argument(flag, dest=dest, action="store_true", default=None, help=help_text)
        return
    union = typing.get_origin(hint) in (typing.Union, types.UnionType)
    options = [o for o in (typing.get_args(hint) if union else (hint,)) if o is not type(None)]
    choices = list(typing.get_args(options[0])) if typing.get_origin(options[0]) is typing.Literal else None
    scalar = options[0] if options[0] in (int, float) else str
    metavar = None if choices else flag.lstrip("-").replace("-", "_").upper()
    parser.add_argument(flag, dest=dest, choices=choices, type=scalar, default=None, metavar=metavar,
                        help=help_text)


def config_from_args(args: argparse.Namespace, flags: dict[str, str], schema: type = PipelineConfig):
    """Load ``args.config`` with ``--set`` overrides, then the given flags (flags win)."""
    overrides = list(args.overrides)
    for key in flags.values():
        value = getattr(args, _dest(key), None)
        if value is not None:
            overrides.append(f"{key}={json.dumps(value)}")  # JSON is YAML: "runs/x" stays a string
    return load_config(args.config, overrides, schema=schema)


def flag_value(args: argparse.Namespace, key: str):
    """The value given on the command line for config key ``key``'s flag, or None when it was not given."""
    return getattr(args, _dest(key), None)


def _dest(key: str) -> str:
    return "cfg__" + key.replace(".", "__")


# ---------------------------------------------------------------- tritonrl config show | validate
CONFIG_DESCRIPTION = """\
Print the config a run would use, or check config files before launching a run.

  tritonrl config show [--config configs/smoke.yaml] [--set rl.steps=3] [--comments]   # YAML on stdout
  tritonrl config validate configs/*.yaml                                              # exit 0, or 2

show prints what a run would use (defaults <- YAML <- --set); --comments adds each key's help.
validate checks every file (duplicate keys, types, choices, ranges, rules between keys) and prints
one line per problem."""


def register(subparsers) -> None:
    p = subparsers.add_parser("config", help="show the resolved config, or validate config files",
                              description=CONFIG_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = p.add_subparsers(dest="config_command", metavar="SUBCOMMAND", required=True)
    show = commands.add_parser("show", help="print the resolved config (defaults <- YAML <- --set) as YAML")
    add_config_arguments(show, {}, config_required=False)
    show.add_argument("--comments", action="store_true", help="annotate every key with its help text")
    show.set_defaults(func=_show)
    validate = commands.add_parser("validate", help="check config files; exit 0 when all are valid, else 2")
    validate.add_argument("files", nargs="+", metavar="FILE", help="YAML config files")
    validate.set_defaults(func=_validate)


def _show(args: argparse.Namespace) -> int:
    print(render(config_from_args(args, {}), comments=args.comments), end="")
    return 0


def _validate(args: argparse.Namespace) -> int:
    status = 0
    for path in args.files:
        errors = validate_file(path, schema=PipelineConfig)
        for error in errors:
            print(f"tritonrl: error: {error}", file=sys.stderr)
        if errors:
            status = 2
        else:
            print(f"ok {path}")
    return status


def render(config, comments: bool = False) -> str:
    """The config as YAML; with ``comments``, each key followed by ``# help``."""
    import yaml

    if not comments:
        return yaml.safe_dump(dataclasses.asdict(config), sort_keys=False)
    lines = []
    for section in dataclasses.fields(config):
        value = getattr(config, section.name)
        lines.append(f"{section.name}:")
        for f in dataclasses.fields(value):
            flow = yaml.safe_dump([getattr(value, f.name)], default_flow_style=True, width=10**6).strip()[1:-1]
            note = f.metadata.get("help")
            lines.append(f"  {f.name}: {flow}" + (f"  # {note}" if note else ""))
    return "\n".join(lines) + "\n"
