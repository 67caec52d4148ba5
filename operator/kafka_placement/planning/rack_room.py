"""Whether the brokers can hold what every plan must put on them under the disk headroom: a necessary
condition, checked in milliseconds where the greedy repair found no room, before any search. Pure: no I/O.

A rack rule spreads a partition's ``r`` replicas over the child units of each unit holding some as
evenly as their brokers allow (``topology.RackTree``): a child unit ``c`` of a unit holding ``m`` of them,
among ``k`` children, holds at least ``min(receivers of c, m // k)``. Were it to hold fewer, it could
take one more, so no sibling could hold two more than it, and the ``k`` children would hold fewer than
``m``. (``k`` counts the units of every broker, those that may not receive too, and a child's receivers
are the brokers that may take a new replica: both make the bound weaker, never wrong.) So the brokers of
each unit must hold at least the sum, over the rule's partitions, of their bytes times that least count;
a partition no goal may change (``waiting.no_in_sync_replica``) counts where it is. The cluster as a
whole must hold every replica of every partition.

What a broker may hold after any plan: on each of its volumes the bytes of the snapshot's replicas there
plus the room the limit leaves it (``headroom.room``; none for a volume above the limit already). A
broker with a dir of unknown size has no limit, and a unit holding one is not checked; nor is a snapshot
with a replica whose dir is unknown (no volume counts it).

Where a unit falls short, no plan keeps every dir within the limit whatever a search tries (120
partitions on 8 brokers: the exact program's node budget took 11 s to find nothing, the searches 2.5 s
more, before the request was refused): the hard goal refuses it at once, naming the unit, the bytes it
must hold and the most it may.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from .context import PlanningContext
from .targets import replication_factor
from .topology import RackTree, Unit
from .waiting import no_in_sync_replica

Key = tuple[str, int]
DirKey = tuple[int, str]
SHOWN = 12  # brokers a refusal names at most


@dataclass(frozen=True, slots=True)
class Shortfall:
    """A unit whose brokers must hold more bytes of replicas than their volumes may after any plan."""

    unit: str  # as messages name it: "dc3", "dc1/r2"; "" for the whole cluster
    brokers: tuple[int, ...]
    needed: int  # the bytes every plan puts on them, at least
    most: int  # the most bytes their volumes may hold within the limit
    partitions: int  # the partitions that put replicas there
    largest: Key  # the largest of them

    @property
    def detail(self) -> str:
        """What falls short, for the refusal (``headroom.refused`` names the limit and the fullest dir)."""
        of = f"{self.partitions} partition{'s' if self.partitions > 1 else ''}"
        if not self.unit:
            return (
                f"the cluster's {len(self.brokers)} brokers must hold {self.needed} bytes of replicas (every "
                f"replica of {of}), and their volumes may hold at most {self.most} bytes within the limit"
            )
        ids = ", ".join(map(str, self.brokers[:SHOWN]))
        if len(self.brokers) > SHOWN:
            ids += f" and {len(self.brokers) - SHOWN} more"
        return (
            f"the brokers of {self.unit} ({ids}) must hold at least {self.needed} bytes of replicas of {of} "
            f"(the rack rule's share of each there), and their volumes may hold at most {self.most} bytes "
            "within the limit"
        )


@dataclass(slots=True)
class _Need:
    """What every plan puts on one unit's brokers, at least, as the partitions are read."""

    name: str
    depth: int
    needed: int = 0
    partitions: int = 0
    largest: tuple[int, Key] | None = None

    def add(self, size: int, key: Key, times: int) -> None:
        self.needed += size * times
        self.partitions += 1
        if self.largest is None or size > self.largest[0]:  # (the first in the snapshot's order on a tie)
            self.largest = (size, key)


def shortfall(ctx: PlanningContext) -> Shortfall | None:
    """The first unit (the cluster, then each rack rule's units, shallowest first) whose brokers cannot
    hold what every plan must put on them (module docstring); None when each unit checked can."""
    snapshot, e = ctx.snapshot, ctx.eligibility
    if not e.volumes or any(None in p.log_dirs for p in snapshot.partitions):
        return None
    frozen = [p for p in snapshot.partitions if no_in_sync_replica(e.dead, p.replicas, p.leader, p.isr)]
    stays: dict[int, int] = {}
    for p in frozen:  # (no goal may change them: they stay as they are)
        for b in p.replicas:
            stays[b] = stays.get(b, 0) + p.size_bytes
    most = most_per_broker(ctx, stays)
    still = {p.key for p in frozen}
    # one need per unit of a rule (its path under the rule: two policies of one rule share their units;
    # two units of one broker set, a unit and its only child, stay apart: each counts the partition once)
    needs: dict[tuple[object, ...], _Need] = {("cluster",): _Need("", 0)}
    brokers_of: dict[tuple[object, ...], tuple[int, ...]] = {("cluster",): tuple(sorted(most))}
    groups: dict[tuple[str, int], _Need] = {}  # the rule's partitions of one policy and RF, summed
    topic_policy = ctx.assignment.topic_policy
    for p in snapshot.partitions:
        rf = len(p.replicas) if p.key in still else replication_factor(ctx, p.key)
        needs[("cluster",)].add(p.size_bytes, p.key, rf)
        policy = topic_policy.get(p.topic)
        tree = ctx.trees.get(policy.name) if policy is not None and policy.enforced else None
        if policy is None or tree is None:
            continue
        if p.key in still:
            _spread(needs, brokers_of, tree, tree.counts(p.replicas), p.size_bytes, 1, (p.size_bytes, p.key))
        else:
            group = groups.get((policy.name, rf))
            if group is None:
                group = groups[(policy.name, rf)] = _Need(policy.name, 0)
            group.add(p.size_bytes, p.key, 1)
    for (name, rf), group in groups.items():
        tree = ctx.trees[name]
        assert group.largest is not None
        _spread(
            needs, brokers_of, tree, least_counts(tree, rf), group.needed, group.partitions, group.largest
        )
    for key, need in sorted(needs.items(), key=lambda kv: (kv[1].depth, kv[1].name)):
        brokers = brokers_of[key]
        limits = [most.get(b, 0) for b in brokers]  # (a broker without dirs holds nothing)
        if need.largest is None or any(m is None for m in limits):
            continue  # a dir of unknown size: no limit there
        held = sum(m for m in limits if m is not None)
        if need.needed > held:
            return Shortfall(need.name, brokers, need.needed, held, need.partitions, need.largest[1])
    return None


def _spread(
    needs: dict[tuple[object, ...], _Need],
    brokers_of: dict[tuple[object, ...], tuple[int, ...]],
    tree: RackTree,
    least: Mapping[Unit, int],
    size: int,
    partitions: int,
    largest: tuple[int, Key],
) -> None:
    """Add ``partitions`` partitions of ``size`` bytes in all (the largest of them ``largest``: its size and
    key), each holding ``least`` replicas in the units of ``tree``, to the needs of those units."""
    for unit, n in least.items():
        if not unit or n <= 0:
            continue
        key = (tree.rule.separator, tree.rule.levels, unit)
        need = needs.get(key)
        if need is None:
            need = needs[key] = _Need("/".join(part or "''" for part in unit), len(unit))  # ('': no rack)
            brokers_of[key] = tree.under.get(unit, ())
        need.needed += size * n
        need.partitions += partitions
        if need.largest is None or largest[0] > need.largest[0]:
            need.largest = largest


def least_counts(tree: RackTree, replicas: int) -> dict[Unit, int]:
    """The fewest replicas of a partition of ``replicas`` replicas each unit of ``tree`` holds in every
    spread the rule accepts (module docstring); units holding none at least are left out. (Every broker's
    path has the rule's levels, a rack without them padded: each unit's brokers are all in its children.)"""
    children: dict[Unit, set[Unit]] = {}
    for path in tree.path.values():
        for depth in range(min(len(path), tree.levels)):
            children.setdefault(path[:depth], set()).add(path[: depth + 1])
    out: dict[Unit, int] = {(): replicas}
    todo: list[Unit] = [()]
    while todo:
        unit = todo.pop()
        kids = children.get(unit, set())
        for child in kids:
            n = out[unit] if len(kids) == 1 else min(tree.capacity.get(child, 0), out[unit] // len(kids))
            if n > 0:
                out[child] = n
                todo.append(child)
    return out


def volume_room(ctx: PlanningContext) -> dict[DirKey, tuple[list[DirKey], int]]:
    """Each volume of known size whose dirs are not all drained: its dirs and the most bytes they may
    hold after the plan, their bytes before plus the volume's room under the disk headroom limit
    (``headroom.room``, as the assignment starts from it; none for a volume above the limit already: its
    replicas may stay or leave). The exact program's room rows, and what this module's units may hold."""
    held: dict[DirKey, int] = {}
    for p in ctx.snapshot.partitions:
        for b, d in zip(p.replicas, p.log_dirs, strict=True):
            if d is not None:
                held[(b, d)] = held.get((b, d), 0) + p.size_bytes
    e, a = ctx.eligibility, ctx.assignment
    groups: dict[DirKey, list[DirKey]] = {}
    for place, v in a.vol.items():
        groups.setdefault(v, []).append(place)
    return {
        v: (places, sum(held.get(d, 0) for d in places) + max(a.room0[v], 0))
        for v, places in groups.items()
        if not all(d in e.drained for d in places)
    }


def most_per_broker(ctx: PlanningContext, stays: Mapping[int, int]) -> dict[int, int | None]:
    """The most bytes of replicas each broker may hold after any plan: ``volume_room``'s, summed over its
    volumes, for a broker that may keep replicas (none for one decommissioned or without a dir that is not
    drained: every replica leaves it), plus ``stays``, the bytes of the replicas no goal may move (counted
    again where its volumes count them: weaker, never wrong); None for a broker with a dir of unknown size
    (no limit there)."""
    a, e = ctx.assignment, ctx.eligibility
    out: dict[int, int | None] = {}
    for b, paths in e.dirs.items():
        out[b] = None if any((b, path) not in a.vol for path in paths) else stays.get(b, 0)
    for v, (_, most) in volume_room(ctx).items():
        held = out.get(v[0])
        if held is not None and e.broker_may_keep(v[0]):
            out[v[0]] = held + most
    return out


__all__ = ["Shortfall", "least_counts", "most_per_broker", "shortfall", "volume_room"]
