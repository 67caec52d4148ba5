"""The planner's goals, in priority order: hard placement rules first, then balance (soft)."""

from __future__ import annotations

from ..context import Goal
from .broker_balance import BrokerBalanceGoal
from .dir_balance import DirBalanceGoal
from .leader_balance import LeaderBalanceGoal
from .replica_placement import ReplicaPlacementGoal


def default_goals() -> list[Goal]:
    """Hard constraints, then bytes across brokers, bytes across each broker's dirs, then leaders."""
    return [ReplicaPlacementGoal(), BrokerBalanceGoal(), DirBalanceGoal(), LeaderBalanceGoal()]


__all__ = [
    "BrokerBalanceGoal",
    "DirBalanceGoal",
    "LeaderBalanceGoal",
    "ReplicaPlacementGoal",
    "default_goals",
]
