"""The CLI imports only the module of the command it runs; the map of commands must stay complete."""

from __future__ import annotations

import argparse

from exporter.cli.main import COMMAND_MODULES, SUBCOMMAND_MODULES, build_parser


def _commands(parser: argparse.ArgumentParser) -> set[str]:
    [subparsers] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return set(subparsers.choices)


def test_every_command_maps_to_the_module_that_registers_it() -> None:
    assert _commands(build_parser()) == set(COMMAND_MODULES)
    for command, module in COMMAND_MODULES.items():
        assert module in SUBCOMMAND_MODULES
        assert command in _commands(build_parser((module,))), (command, module)
