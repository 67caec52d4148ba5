"""How hard the planner searches for the cheapest plan: ``KafkaCluster.spec.planner.effort`` and the
CLI's ``--effort`` (one definition for both, the CRD schema and the docs).

- ``Fast``: the greedy goals only. No exact program for quality (planning/exact.py still runs where the
  greedy searches found no packing at all: that is feasibility, not quality).
- ``Balanced`` (the default): on small clusters the exact program runs, and stops once its best plan is
  proven within ``BALANCED_GAP`` of the optimum (HiGHS's relative MIP gap), within the deterministic work
  limits scaled to the instance.
- ``Exhaustive``: the exact program searches up to its full work limits for the proven optimum (HiGHS's
  own gap of 1e-4): slower on small clusters where a plan a fraction of a percent cheaper may exist.
"""

from __future__ import annotations

from typing import Final, Literal

Effort = Literal["Fast", "Balanced", "Exhaustive"]
EFFORTS: Final[tuple[Effort, ...]] = ("Fast", "Balanced", "Exhaustive")
DEFAULT_EFFORT: Final[Effort] = "Balanced"
BALANCED_GAP: Final = 0.005  # the exact program stops once proven within 0.5% of the optimum
DESCRIPTION: Final = (
    "How hard the planner searches for the plan copying the fewest bytes: Fast (greedy goals only), "
    "Balanced (on small clusters an exact program, stopped once proven within 0.5% of the optimum), "
    "Exhaustive (the exact program up to its full work limits)."
)
