"""The intents' phase transitions an operator's log shows, held to the phase table (reconcile/phases.py):
every e2e operator's log is checked when it stops (conftest.py, ``Operator.kill``)."""

from __future__ import annotations

import re

from kafka_placement.reconcile.phases import IntentEvent, PhaseMove, move

TRANSITION = re.compile(r": phase (\w+) -> (\w+) \(event (\w+), reason (\w+)\)")


def outside_the_table(log: str) -> list[str]:
    """The transitions in ``log`` (one line each, ``LOG_TRANSITION``) that the table does not allow."""
    out = []
    for m in TRANSITION.finditer(log):
        before, after, event, reason = m.groups()
        try:
            moved = move(None if before == "None" else before, IntentEvent(event), reason)
        except ValueError:  # an event the table does not know
            moved = None
        if moved != PhaseMove(after, reason):
            out.append(m.group(0))
    return out
