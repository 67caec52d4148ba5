"""LogDirCordon handler: validate the spec; deleting it uncordons its dirs in Kafka and cancels its moves.

The cordon itself is set by the cluster reconciler (``cordoned.log.dirs`` on Kafka >= 4.3, KIP-1066).
"""

from __future__ import annotations

from typing import Any

import kopf

from ..model.errors import PlacementError
from ..model.intents import LogDirCordon
from .fencing import FencedGateway
from .intent_common import cancel_if_participating, validate
from .reconciler import GROUP, VERSION, connection_settings
from .runtime import runtime

KIND = "LogDirCordon"


@kopf.on.resume(GROUP, VERSION, "logdircordons")
@kopf.on.create(GROUP, VERSION, "logdircordons")
@kopf.on.update(GROUP, VERSION, "logdircordons", field="spec")
def accept(body: kopf.Body, patch: kopf.Patch, **_: Any) -> None:
    validate(KIND, body, patch)


@kopf.on.delete(GROUP, VERSION, "logdircordons")
def delete(body: kopf.Body, logger: Any, **_: Any) -> None:
    cancel_if_participating(body, logger)
    uncordon(body, logger)


def uncordon(body: kopf.Body, logger: Any) -> None:
    """Remove this resource's dirs from ``cordoned.log.dirs`` unless another LogDirCordon covers them."""
    meta, spec = body["metadata"], body.get("spec") or {}
    cluster = (spec.get("clusterRef") or {}).get("name")
    rec = runtime().reconciler
    owner = rec.cluster(meta["namespace"], cluster)
    if owner is None or not cluster:
        return
    try:
        mine = validate_spec(body)
    except PlacementError:
        return  # an invalid resource never cordoned anything
    others = [
        b
        for b in rec.intents_of(meta["namespace"], cluster)
        if b["kind"] == KIND
        and b["metadata"]["uid"] != meta["uid"]
        and not b["metadata"].get("deletionTimestamp")
    ]
    try:
        with FencedGateway(
            connection_settings(owner.get("spec") or {}, meta["namespace"], rec.kube),
            rec.leadership.fence,
        ) as gw:
            if not gw.supports_cordon():
                return
            snap = gw.snapshot()
            broker = snap.broker(mine.broker)
            if broker is None:
                return
            paths = set(broker.dir_paths if mine.whole_broker else mine.log_dirs)
            for b in others:
                o = b.get("spec") or {}
                if o.get("broker") == mine.broker:
                    paths -= set(
                        broker.dir_paths if "*" in (o.get("logDirs") or []) else o.get("logDirs") or []
                    )
            cordoned = [p for p in sorted(paths) if (d := broker.dir(p)) is not None and d.cordoned]
            if cordoned:
                gw.set_cordon(mine.broker, cordoned, False)
                logger.info(f"uncordoned {cordoned} on broker {mine.broker}")
    except PlacementError as e:
        raise kopf.TemporaryError(f"cannot uncordon yet: {e.message}", delay=10) from None


def validate_spec(body: kopf.Body) -> LogDirCordon:
    from ..model.intents import parse_spec

    intent = parse_spec(KIND, body.get("spec") or {}, "spec", body["metadata"]["name"])
    assert isinstance(intent, LogDirCordon)
    return intent
