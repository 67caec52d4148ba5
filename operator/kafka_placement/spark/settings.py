"""How to plan: the planning engines' settings (``EngineSettings``) and their size thresholds.

A light module (no planner, no Spark): the CLI's parser shows these defaults without importing the
engines (``spark/engines.py``, which re-exports them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .memory import Limit

AUTO_SPARK_REPLICAS = 1_500_000  # auto: Spark from this many replicas (500k partitions x RF 3)
LOCAL_MAX_REPLICAS = 6_000_000  # local refuses larger snapshots (memory), suggesting spark


@dataclass(frozen=True, slots=True)
class EngineSettings:
    """How to plan: engine name, Spark master and shards, and the size thresholds."""

    engine: str = "local"
    master: str = "local[*]"
    shards: int = 0  # 0 = planning.sharding.auto_shards: 1 for a small repair, else 4 per core
    driver_memory: str = "4g"
    conf: tuple[tuple[str, str], ...] = ()  # more Spark settings (--spark-conf KEY=VALUE)
    executor_wait_s: float = 120.0  # on a cluster: longest time with no executor before giving up
    auto_spark_replicas: int = AUTO_SPARK_REPLICAS
    local_max_replicas: int = LOCAL_MAX_REPLICAS
    memory: Limit | None = None  # the local engine's memory limit (spark/memory.py): refused when over
    # the local engine may fork a copy that selects the repairs and tallies the snapshot (spark/beside.py)
    beside: bool = True
