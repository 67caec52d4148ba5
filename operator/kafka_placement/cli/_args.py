"""Argument parsing of the CLI: a parser whose errors stay short, and range-checked number flags.

argparse echoes a rejected value in full (``invalid int value: '999...'``, ``unrecognized arguments``),
so ``BoundedParser`` cuts every usage error to ``ERROR_LIMIT`` characters; it is the class of every
sub-command's parser too. ``int_in(lo, hi)`` is a ``type=`` that refuses values outside Kafka's ranges at
parse time (exit 2 with the flag's name), before any file is read; ``number_in(lo, hi)`` the same for
finite decimal numbers (``--max-disk-share``). ``key_value`` parses ``KEY=VALUE``. ``lazy(module, name)``
is a command that imports its implementation only when it runs (building the parser stays light).
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable
from typing import NoReturn

from ..model.jsonio import brief, clip

ERROR_LIMIT = 500


EXECUTE_POLL_S = 1.0  # `execute --poll-seconds`' default: the CLI's tick, which `report`'s estimate assumes


def lazy(module: str, name: str) -> Callable[[argparse.Namespace], int]:
    """The command ``name`` of ``kafka_placement.cli.<module>``, imported when it runs (not when the
    parser is built: ``--help`` and usage errors load none of the commands' dependencies)."""

    def run(args: argparse.Namespace) -> int:
        command = getattr(importlib.import_module(f"{__package__}.{module}"), name)
        return int(command(args))

    run.__name__ = name
    return run


class BoundedParser(argparse.ArgumentParser):
    """``argparse.ArgumentParser`` with bounded error messages (exit 2 as usual)."""

    def error(self, message: str) -> NoReturn:
        super().error(clip(message, ERROR_LIMIT))


def int_in(low: int, high: int) -> Callable[[str], int]:
    """An argparse ``type`` accepting decimal integers from ``low`` to ``high``."""

    def parse(text: str) -> int:
        stripped = text.strip()
        digits = stripped[1:] if stripped[:1] in "+-" else stripped
        if not digits.isascii() or not digits.isdigit() or len(digits) > 20:
            raise argparse.ArgumentTypeError(f"expected an integer from {low} to {high}, got {brief(text)}")
        value = int(stripped)
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be from {low} to {high}, got {brief(value)}")
        return value

    parse.__name__ = "integer"
    return parse


def number_in(low: float, high: float) -> Callable[[str], float]:
    """An argparse ``type`` accepting finite decimal numbers from ``low`` to ``high``."""

    def parse(text: str) -> float:
        try:
            value = float(text.strip()) if len(text) <= 40 else float("nan")
        except ValueError:
            value = float("nan")
        if value != value or value in (float("inf"), float("-inf")):
            raise argparse.ArgumentTypeError(f"expected a number from {low:g} to {high:g}, got {brief(text)}")
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be from {low:g} to {high:g}, got {brief(text)}")
        return value

    parse.__name__ = "number"
    return parse


def key_value(text: str) -> tuple[str, str]:
    """An argparse ``type`` for ``KEY=VALUE`` (a non-empty key without spaces)."""
    key, sep, value = text.partition("=")
    if not sep or not key or any(c.isspace() for c in key):
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {brief(text)}")
    return key, value


key_value.__name__ = "KEY=VALUE"
