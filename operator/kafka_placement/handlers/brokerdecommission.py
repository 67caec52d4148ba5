"""BrokerDecommission handler: validate the spec; deleting it cancels its moves if they are in flight and
uncordons its brokers in Kafka.

From its acceptance the cluster reconciler keeps every broker it retires cordoned (``cordoned.log.dirs``
on all the broker's dirs, Kafka >= 4.3, KIP-1066): no new replica lands on a broker being drained or
drained. Deleting it removes those cordons unless another live resource still declares them
(``intent_common.uncordon``, shared with LogDirCordon).
"""

from __future__ import annotations

from typing import Any

import kopf

from ..model.crd_parts import GROUP, VERSION
from .intent_common import cancel_if_participating, uncordon, validate

KIND = "BrokerDecommission"


@kopf.on.resume(GROUP, VERSION, "brokerdecommissions")
@kopf.on.create(GROUP, VERSION, "brokerdecommissions")
@kopf.on.update(GROUP, VERSION, "brokerdecommissions", field="spec")
def accept(body: kopf.Body, patch: kopf.Patch, **_: Any) -> None:
    validate(KIND, body, patch)


@kopf.on.delete(GROUP, VERSION, "brokerdecommissions")
def delete(body: kopf.Body, logger: Any, **_: Any) -> None:
    cancel_if_participating(body, logger)
    uncordon(KIND, body, logger)
