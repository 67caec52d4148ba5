"""The three intent kinds' handlers (BrokerDecommission, LogDirCordon, PlacementPolicy), registered once
per kind: a new or changed spec is validated (``intent_common.validate``: Pending, or Failed naming the
field); deleting a resource cancels its moves if they are in flight (KIP-455 revert) and, for the kinds
that cordon (a decommission's brokers, a cordon's dirs: ``cordoned.log.dirs``, KIP-1066, set and removed
by the cluster's reconcile, reconcile/cordons.py), waits until the reconcile has removed the cordons no
other live resource declares (``intent_common.wait_uncordoned``).
"""

from __future__ import annotations

from typing import Any

import kopf

from ..model.crd_parts import GROUP, PLURALS, VERSION
from .intent_common import cancel_if_participating, validate, wait_uncordoned

CORDONING = ("BrokerDecommission", "LogDirCordon")  # the kinds whose deletion waits for their uncordon
KINDS = (*CORDONING, "PlacementPolicy")


def register(kind: str) -> None:
    """kopf's handlers of one intent kind."""
    plural = PLURALS[kind]

    # the ids the handlers had as module functions (kopf keeps a handler's progress under its id)
    @kopf.on.resume(GROUP, VERSION, plural, id="accept")
    @kopf.on.create(GROUP, VERSION, plural, id="accept")
    @kopf.on.update(GROUP, VERSION, plural, field="spec", id="accept")
    def accept(body: kopf.Body, patch: kopf.Patch, **_: Any) -> None:
        validate(kind, body, patch)

    @kopf.on.delete(GROUP, VERSION, plural, id="delete")
    def delete(body: kopf.Body, logger: Any, **_: Any) -> None:
        cancel_if_participating(body, logger)
        if kind in CORDONING:
            wait_uncordoned(kind, body)


for _kind in KINDS:
    register(_kind)
