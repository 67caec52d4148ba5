"""LogDirCordon handler: validate the spec; deleting it uncordons its dirs in Kafka and cancels its moves.

The cordon itself is set by the cluster reconciler (``cordoned.log.dirs`` on Kafka >= 4.3, KIP-1066);
removing it is shared with BrokerDecommission (``intent_common.uncordon``).
"""

from __future__ import annotations

from typing import Any

import kopf

from ..model.crd_parts import GROUP, VERSION
from .intent_common import cancel_if_participating, uncordon, validate

KIND = "LogDirCordon"


@kopf.on.resume(GROUP, VERSION, "logdircordons")
@kopf.on.create(GROUP, VERSION, "logdircordons")
@kopf.on.update(GROUP, VERSION, "logdircordons", field="spec")
def accept(body: kopf.Body, patch: kopf.Patch, **_: Any) -> None:
    validate(KIND, body, patch)


@kopf.on.delete(GROUP, VERSION, "logdircordons")
def delete(body: kopf.Body, logger: Any, **_: Any) -> None:
    cancel_if_participating(body, logger)
    uncordon(KIND, body, logger)
