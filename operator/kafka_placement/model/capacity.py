# ruff: noqa: RUF009  (leaf/custom return dataclasses.field specifiers, like field(): nothing is shared)
"""``KafkaCluster.spec.capacity``: what each broker can carry (network in and out, bytes per second; disk,
bytes), a default and per-broker overrides, typed and with its CRD schema from one declaration
(``spec_fields.py``).

A broker's capacity is, field by field, its override's, else the default's, else unknown (None): a
capacity nobody declared is never made up. Every value is a positive integer (the CRD's ``minimum`` and
the parser refuse zero and negatives); an override names a broker once (the CRD's list-map key ``id``, and
the parser). ``maxShare`` (default 0.8) is the share of a broker's network capacity the planner may plan
it up to (planning/goals/network.py). ``maxDiskShare`` (default 0.85, 0.5 to 0.98) is the share of each
log dir's volume no plan fills it beyond (planning/headroom.py); it applies whether or not any other
capacity is declared. Whether the brokers named exist is only known against a cluster:
``unknown_brokers``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, ClassVar

from .crd_parts import Schema, arr_schema, int_schema
from .errors import BadInputError
from .jsonio import as_list, check_unique
from .spec_fields import child, custom, leaf, object_schema, parse_object

MAX_OVERRIDES = 10_000
DEFAULT_MAX_SHARE = 0.8  # headroom for bursts and for a failed broker's leaders moving over
# the share of a log dir's volume a plan may fill it to (a full dir goes offline: room for the
# producers writing while replicas move, and for segments not yet deleted)
DEFAULT_MAX_DISK_SHARE = 0.85
MIN_DISK_SHARE, MAX_DISK_SHARE = 0.5, 0.98


def _bytes(description: str) -> Schema:
    return int_schema(description, 1, int64=True)


NETWORK_IN = "Network in, bytes per second (producers and replication into the broker); at least 1."
NETWORK_OUT = "Network out, bytes per second (consumers and followers fetching from it); at least 1."
DISK = "Disk, bytes (all its log dirs); at least 1."


@dataclass(frozen=True, slots=True, kw_only=True)
class Capacity:
    """One broker's capacity (or the default's): a field left out is unknown."""

    DESCRIPTION: ClassVar[str] = "Capacity of a broker: each field absent = unknown."

    network_in: int | None = leaf("networkInBytesPerSec", _bytes(NETWORK_IN))
    network_out: int | None = leaf("networkOutBytesPerSec", _bytes(NETWORK_OUT))
    disk: int | None = leaf("diskBytes", _bytes(DISK))

    def over(self, default: Capacity) -> Capacity:
        """This capacity, its unknown fields taken from ``default``."""
        return Capacity(
            network_in=default.network_in if self.network_in is None else self.network_in,
            network_out=default.network_out if self.network_out is None else self.network_out,
            disk=default.disk if self.disk is None else self.disk,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class BrokerCapacity:
    """An override: broker ``id``'s capacity (its fields absent: the default's)."""

    DESCRIPTION: ClassVar[str] = "One broker's capacity, over the default field by field."

    id: int = leaf("id", int_schema("Broker id (must be a broker of the cluster).", 0), required=True)
    network_in: int | None = leaf("networkInBytesPerSec", _bytes(NETWORK_IN))
    network_out: int | None = leaf("networkOutBytesPerSec", _bytes(NETWORK_OUT))
    disk: int | None = leaf("diskBytes", _bytes(DISK))

    @property
    def capacity(self) -> Capacity:
        return Capacity(network_in=self.network_in, network_out=self.network_out, disk=self.disk)


def _brokers_schema() -> Schema:
    s = arr_schema(
        "Per-broker overrides (a broker once), over the default field by field.",
        object_schema(BrokerCapacity),
        maxItems=MAX_OVERRIDES,
    )
    s["x-kubernetes-list-type"] = "map"
    s["x-kubernetes-list-map-keys"] = ["id"]
    return s


def _brokers(raw: object, where: str) -> tuple[BrokerCapacity, ...]:
    items = as_list(raw, where)
    if len(items) > MAX_OVERRIDES:
        raise BadInputError(f"at most {MAX_OVERRIDES} entries, got {len(items)}", where)
    out = tuple(parse_object(BrokerCapacity, v, f"{where}[{i}]") for i, v in enumerate(items))
    check_unique((b.id for b in out), "broker {} is listed twice".format, lambda i: f"{where}[{i}].id")
    return out


@dataclass(frozen=True, slots=True, kw_only=True)
class CapacitySpec:
    """``spec.capacity``: a default and per-broker overrides (see the module docstring)."""

    DESCRIPTION: ClassVar[str] = (
        "Broker capacities (network in/out bytes per second, disk bytes): a default and per-broker "
        "overrides; status.traffic shows each broker's load beside its capacity."
    )

    default: Capacity = child("default", Capacity, absent=True)
    max_share: float = leaf(
        "maxShare",
        {
            "type": "number",
            "description": (
                "The share of each broker's network capacity the planner may plan it up to (a hard"
                " limit: no plan takes a broker above it; brokers above it shed load); 0.8 = 80%."
            ),
            "minimum": 0.01,
            "maximum": 1,
            "default": DEFAULT_MAX_SHARE,
        },
    )
    max_disk_share: float = leaf(
        "maxDiskShare",
        {
            "type": "number",
            "description": (
                "The share of each log dir's volume no plan fills it beyond (a hard limit: a plan that"
                " cannot keep every dir under it is refused, reason DiskHeadroom; a dir already above it"
                " receives no replica); 0.85 = 85%. A dir whose volume size is unknown has no limit."
            ),
            "minimum": MIN_DISK_SHARE,
            "maximum": MAX_DISK_SHARE,
            "default": DEFAULT_MAX_DISK_SHARE,
        },
    )
    disk_per_log_dir: bool = leaf(
        "diskPerLogDir",
        {
            "type": "boolean",
            "description": (
                "Every log dir is on a disk of its own. Without it, two dirs of one broker reporting the"
                " same total and usable bytes are taken for one shared filesystem (one volume, one room),"
                " which is always safe but halves what a new broker with identical empty disks may take;"
                " set it when no two log dirs of a broker share a filesystem."
            ),
            "default": False,
        },
    )
    brokers: tuple[BrokerCapacity, ...] | None = custom("brokers", _brokers_schema(), _brokers)

    def of(self, broker: int) -> Capacity:
        """Broker ``broker``'s capacity (its override over the default)."""
        for b in self.brokers or ():
            if b.id == broker:
                return b.capacity.over(self.default)
        return self.default

    def unknown_brokers(self, brokers: Iterable[int], where: str = "spec.capacity") -> None:
        """``BadInputError`` naming the first override whose broker is not one of ``brokers``."""
        known = set(brokers)
        for i, b in enumerate(self.brokers or ()):
            if b.id not in known:
                listed = ", ".join(map(str, sorted(known)[:20])) + (", ..." if len(known) > 20 else "")
                raise BadInputError(
                    f"broker {b.id} is not a broker of the cluster (brokers: {listed})",
                    f"{where}.brokers[{i}].id",
                )

    def to_json(self) -> dict[str, Any]:
        """The spec as written (``parse`` reads it back equal): the intents file's ``capacity``."""

        def fields(c: Capacity | BrokerCapacity) -> dict[str, int]:
            named = (
                ("networkInBytesPerSec", c.network_in),
                ("networkOutBytesPerSec", c.network_out),
                ("diskBytes", c.disk),
            )
            return {k: v for k, v in named if v is not None}

        out: dict[str, Any] = {"default": fields(self.default), "maxShare": self.max_share}
        if self.max_disk_share != DEFAULT_MAX_DISK_SHARE:  # (the text a plan's key hashes: as before)
            out["maxDiskShare"] = self.max_disk_share
        if self.disk_per_log_dir:  # (the same: only when declared)
            out["diskPerLogDir"] = True
        if self.brokers is not None:
            out["brokers"] = [{"id": b.id, **fields(b)} for b in self.brokers]
        return out

    @staticmethod
    def parse(raw: object, where: str = "spec.capacity") -> CapacitySpec:
        return parse_object(CapacitySpec, raw, where)

    @staticmethod
    def schema() -> Schema:
        return object_schema(CapacitySpec)


__all__ = [
    "DEFAULT_MAX_DISK_SHARE",
    "DEFAULT_MAX_SHARE",
    "MAX_DISK_SHARE",
    "MIN_DISK_SHARE",
    "BrokerCapacity",
    "Capacity",
    "CapacitySpec",
]
