"""The planner's goals, in priority order: hard placement rules first, then balance (soft)."""

from __future__ import annotations

from ..context import Goal
from .broker_balance import BrokerBalanceGoal
from .dir_balance import DirBalanceGoal
from .disk_relief import DiskReliefGoal
from .exact_placement import ExactPlacementGoal
from .failure_spread import FailureSpreadGoal
from .leader_balance import LeaderBalanceGoal
from .network import (
    LeaderBytesInBalanceGoal,
    NetworkCapacityGoal,
    NetworkInBalanceGoal,
    NetworkOutBalanceGoal,
)
from .replica_placement import ReplicaPlacementGoal


def default_goals() -> list[Goal]:
    """The goals in priority order (each later goal only makes moves every earlier one accepts):

    1. ``ReplicaPlacement`` (hard): decommissions, cordons and drains, replication factor, rack spread;
    2. ``NetworkCapacity`` (hard; a snapshot with traffic and declared network capacities): no broker
       above ``capacity.maxShare`` of its network in or out; then ``DiskRelief`` (hard): the dirs a
       LogDirCordon asks to relieve end under its ``relieveBelowShare``, the fewest bytes moved;
    3. ``BrokerBalance``: bytes across brokers, then ``ExactPlacement`` (small clusters only: the cheapest
       placement under the rules above, ``planning/exact.py``, when it copies less or meets a balance
       the greedy steps missed); 4. ``DirBalance``: bytes across each broker's dirs;
    5. ``LeaderBalance``: preferred leaders per broker;
    6. ``NetworkInBalance`` (``balance.networkIn``): network in per broker;
    7. ``NetworkOutBalance`` (``balance.networkOut``): network out per broker, hand-overs first;
    8. ``LeaderBytesInBalance`` (``balance.networkOut`` too): the leaders' bytes in per broker, by
       hand-overs that keep network out within its threshold;
    9. ``FailureSpread``: the spread of each leader's followers.

    Without a rate in the snapshot the network goals do nothing and accept every move: plans are the
    same as without them."""
    return [
        ReplicaPlacementGoal(),
        NetworkCapacityGoal(),
        DiskReliefGoal(),
        BrokerBalanceGoal(),
        ExactPlacementGoal(),
        DirBalanceGoal(),
        LeaderBalanceGoal(),
        NetworkInBalanceGoal(),
        NetworkOutBalanceGoal(),
        LeaderBytesInBalanceGoal(),
        FailureSpreadGoal(),
    ]


def balance_goals() -> list[Goal]:
    """The goals after the hard placement goal (the sharded engine runs them globally after its shards)."""
    return default_goals()[1:]


__all__ = [
    "BrokerBalanceGoal",
    "DirBalanceGoal",
    "DiskReliefGoal",
    "ExactPlacementGoal",
    "FailureSpreadGoal",
    "LeaderBalanceGoal",
    "LeaderBytesInBalanceGoal",
    "NetworkCapacityGoal",
    "NetworkInBalanceGoal",
    "NetworkOutBalanceGoal",
    "ReplicaPlacementGoal",
    "balance_goals",
    "default_goals",
]
