"""BrokerDecommission handler: validate the spec; deleting it cancels its moves if they are in flight and
waits for its brokers' uncordon.

From its acceptance the cluster reconciler keeps every broker it retires cordoned (``cordoned.log.dirs``
on all the broker's dirs, Kafka >= 4.3, KIP-1066): no new replica lands on a broker being drained or
drained. Once it is being deleted, the reconcile removes those cordons unless another live resource
still declares them; the delete handler waits for that (``intent_common.wait_uncordoned``, shared with
LogDirCordon).
"""

from __future__ import annotations

from typing import Any

import kopf

from ..model.crd_parts import GROUP, PLURALS, VERSION
from .intent_common import cancel_if_participating, validate, wait_uncordoned

KIND = "BrokerDecommission"


@kopf.on.resume(GROUP, VERSION, PLURALS[KIND])
@kopf.on.create(GROUP, VERSION, PLURALS[KIND])
@kopf.on.update(GROUP, VERSION, PLURALS[KIND], field="spec")
def accept(body: kopf.Body, patch: kopf.Patch, **_: Any) -> None:
    validate(KIND, body, patch)


@kopf.on.delete(GROUP, VERSION, PLURALS[KIND])
def delete(body: kopf.Body, logger: Any, **_: Any) -> None:
    cancel_if_participating(body, logger)
    wait_uncordoned(KIND, body)
