"""The planner's goals, in priority order: hard placement rules first, then balance (soft)."""

from __future__ import annotations

from ..context import Goal
from .broker_balance import BrokerBalanceGoal
from .dir_balance import DirBalanceGoal
from .failure_spread import FailureSpreadGoal
from .leader_balance import LeaderBalanceGoal
from .replica_placement import ReplicaPlacementGoal


def default_goals() -> list[Goal]:
    """Hard constraints, then bytes across brokers, bytes across each broker's dirs, leaders, then the
    spread of each leader's followers."""
    return [
        ReplicaPlacementGoal(),
        BrokerBalanceGoal(),
        DirBalanceGoal(),
        LeaderBalanceGoal(),
        FailureSpreadGoal(),
    ]


__all__ = [
    "BrokerBalanceGoal",
    "DirBalanceGoal",
    "FailureSpreadGoal",
    "LeaderBalanceGoal",
    "ReplicaPlacementGoal",
    "default_goals",
]
