"""Error types that map to the CLI's exit codes and to status conditions.

``BadInputError`` (exit 2): the input is malformed or names things that do not exist; ``location``
says where (file, JSON path, resource field). ``InfeasibleError`` (exit 3): the input is well formed
but cannot be satisfied; ``rule`` names the violated hard constraint (``DiskHeadroomError``: no plan keeps
every log dir within its headroom). Anything else is exit 1.
"""

from __future__ import annotations


class PlacementError(Exception):
    """Base of all errors the tool reports to users (never with a traceback)."""

    exit_code = 1
    reason = "Failed"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class BadInputError(PlacementError):
    """Malformed or inconsistent input; ``location`` points at the offending element."""

    exit_code = 2
    reason = "InvalidInput"

    def __init__(self, message: str, location: str = "") -> None:
        super().__init__(f"{location}: {message}" if location else message)
        self.location = location
        self.detail = message


class InfeasibleError(PlacementError):
    """Well-formed intents that no placement can satisfy; ``rule`` names the hard constraint."""

    exit_code = 3
    reason = "Infeasible"

    def __init__(self, message: str, rule: str = "", partition: str = "") -> None:
        parts = [p for p in (partition, rule) if p]
        prefix = " ".join(f"[{p}]" for p in parts)
        super().__init__(f"{prefix} {message}" if prefix else message)
        self.rule = rule
        self.partition = partition
        self.detail = message


DIR_CAPACITY = "dir-capacity"  # the rule of a plan no placement keeps within every dir's headroom


class DiskHeadroomError(InfeasibleError):
    """No plan keeps every log dir within ``maxDiskShare`` of its volume (planning/headroom.py): exit 3,
    and the operator's ``Blocked`` reason ``DiskHeadroom``."""

    reason = "DiskHeadroom"


def infeasible(message: str, rule: str = "", partition: str = "") -> InfeasibleError:
    """The ``InfeasibleError`` of ``rule`` (a ``DiskHeadroomError`` for the disk headroom rule), e.g. read
    back from a shard's or a Spark driver's report."""
    if rule == DIR_CAPACITY or f"[{DIR_CAPACITY}]" in message:
        return DiskHeadroomError(message, rule, partition)
    return InfeasibleError(message, rule, partition)
