"""Failure spread: over how many other brokers the followers of each broker's led partitions spread,
and how many the rules allow (the target of ``balance.failureSpread``). Pure: no I/O.

A broker ``b`` leading partitions of ``r`` replicas can have as followers every other broker the rack
rule lets share a partition with it: under a multi-level spread, a unit holding ``m`` of a partition's
replicas spreads them over its ``k`` child units as evenly as possible, so one child holds at most
``ceil(m / k)``; two brokers under the same child may share the partition only while that share is 2 or
more. Without a rack rule every other broker may. Brokers that may not receive (cordoned) count only
where they already follow it. The target is that count, capped by the follower
slots ``b`` has (its led partitions times ``r - 1``). The even share ignores children too small to take
theirs (a unit short of brokers makes a sibling hold more), so the target can be one or two brokers
short of the most a partition could reach there; never above it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

from .topology import RackTree, Unit


class FollowerRoom:
    """How many brokers may follow each broker, for one rack tree (or none) over ``candidates`` (the
    brokers that may receive a replica). Unit counts are read once; each question walks one broker's
    path."""

    def __init__(self, tree: RackTree | None, candidates: Iterable[int]) -> None:
        self.tree = tree
        self.candidates = frozenset(candidates)
        self._under: dict[Unit, int] = {}
        if tree is not None:
            for b in self.candidates:
                p = tree.path.get(b, ())
                for depth in range(len(p) + 1):
                    self._under[p[:depth]] = self._under.get(p[:depth], 0) + 1

    def allowed(self, broker: int, replicas: int) -> int:
        """How many candidates other than ``broker`` may share a partition of ``replicas`` replicas
        with it."""
        others = len(self.candidates) - (broker in self.candidates)
        tree = self.tree
        if tree is None or replicas < 2:
            return others if replicas >= 2 else 0
        path, m = tree.path.get(broker, ()), replicas
        for depth in range(len(path)):
            k = max(1, len(tree.children.get(path[:depth], ())))
            m = math.ceil(m / k)  # the most replicas one child unit holds
            if m < 2:  # no other replica under the broker's child unit at this depth
                same = self._under.get(path[: depth + 1], 0) - (broker in self.candidates)
                return others - same
        return others


def spread_of(followers: Mapping[int, int]) -> int:
    """Distinct brokers among the followers counted for one leader (``plan_quality.Tally.peers``)."""
    return sum(1 for n in followers.values() if n > 0)


def targets(
    peers: Mapping[int, Mapping[int, int]],
    led: Mapping[int, int],
    leaders: Sequence[int],
    room: Sequence[FollowerRoom],
) -> dict[int, int]:
    """Each leading broker's target: as many followers as the rules allow (the most any ``room``
    allows), at most its follower slots. ``led``: partitions each broker leads."""
    out: dict[int, int] = {}
    for b in leaders:
        n = led.get(b, 0)
        followers = peers.get(b)
        if not n or not followers:
            continue
        slots = sum(followers.values())
        r = math.ceil(slots / n) + 1  # the replicas of its partitions (their mean, rounded up)
        # followers that may not receive (cordoned) count where they are: the plan keeps them valid
        kept = [f for f, k in followers.items() if k > 0 and f != b]
        allowed = max(
            (x.allowed(b, r) + sum(1 for f in kept if f not in x.candidates) for x in room), default=0
        )
        out[b] = min(slots, allowed)
    return out
