"""LogDirCordon handler: validate the spec; deleting it cancels its moves and waits for its dirs' uncordon.

The cordon is set and removed by the cluster's reconcile (``cordoned.log.dirs`` on Kafka >= 4.3,
KIP-1066; reconcile/cordons.py): the delete handler only waits for the removal, like BrokerDecommission's
(``intent_common.wait_uncordoned``).
"""

from __future__ import annotations

from typing import Any

import kopf

from ..model.crd_parts import GROUP, PLURALS, VERSION
from .intent_common import cancel_if_participating, validate, wait_uncordoned

KIND = "LogDirCordon"


@kopf.on.resume(GROUP, VERSION, PLURALS[KIND])
@kopf.on.create(GROUP, VERSION, PLURALS[KIND])
@kopf.on.update(GROUP, VERSION, PLURALS[KIND], field="spec")
def accept(body: kopf.Body, patch: kopf.Patch, **_: Any) -> None:
    validate(KIND, body, patch)


@kopf.on.delete(GROUP, VERSION, PLURALS[KIND])
def delete(body: kopf.Body, logger: Any, **_: Any) -> None:
    cancel_if_participating(body, logger)
    wait_uncordoned(KIND, body)
