"""BrokerDecommission handler: validate the spec; deleting it mid-flight cancels its moves."""

from __future__ import annotations

from typing import Any

import kopf

from .intent_common import cancel_if_participating, validate
from .reconciler import GROUP, VERSION

KIND = "BrokerDecommission"


@kopf.on.resume(GROUP, VERSION, "brokerdecommissions")
@kopf.on.create(GROUP, VERSION, "brokerdecommissions")
@kopf.on.update(GROUP, VERSION, "brokerdecommissions", field="spec")
def accept(body: kopf.Body, patch: kopf.Patch, **_: Any) -> None:
    validate(KIND, body, patch)


@kopf.on.delete(GROUP, VERSION, "brokerdecommissions")
def delete(body: kopf.Body, logger: Any, **_: Any) -> None:
    cancel_if_participating(body, logger)
