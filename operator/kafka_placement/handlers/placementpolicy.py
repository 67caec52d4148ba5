"""PlacementPolicy handler: validate the spec; deleting it mid-flight cancels its moves."""

from __future__ import annotations

from typing import Any

import kopf

from ..model.crd_parts import GROUP, PLURALS, VERSION
from .intent_common import cancel_if_participating, validate

KIND = "PlacementPolicy"


@kopf.on.resume(GROUP, VERSION, PLURALS[KIND])
@kopf.on.create(GROUP, VERSION, PLURALS[KIND])
@kopf.on.update(GROUP, VERSION, PLURALS[KIND], field="spec")
def accept(body: kopf.Body, patch: kopf.Patch, **_: Any) -> None:
    validate(KIND, body, patch)


@kopf.on.delete(GROUP, VERSION, PLURALS[KIND])
def delete(body: kopf.Body, logger: Any, **_: Any) -> None:
    cancel_if_participating(body, logger)
