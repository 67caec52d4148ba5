"""What goals share while planning: the working assignment, eligibility, rack trees and budgets.

Goals run in priority order (hard first, like Cruise Control's goal list). A later goal may only make
a move every earlier goal ``accepts``, so balancing never undoes a decommission or a rack repair. After
planning each goal gives its ``Verdict`` on the plan's summary (the summary's ``goals``).
Pure: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from ..model.intents import Intents, PlacementPolicy, RackAwareness
from ..model.snapshot import ClusterSnapshot
from .plan_summary import PlanSummary
from .state import Assignment, Eligibility, Key
from .topology import RackTree


@dataclass(frozen=True, slots=True)
class Verdict:
    """How a goal stands after a plan: met or not, the value measured and the target it is met at."""

    met: bool
    value: float | None
    target: float
    unreachable: str | None = None  # why no plan can meet it (not the planner's shortfall)


class Goal(Protocol):
    """One placement rule: hard goals must hold after planning (the planner refuses a plan that cannot
    meet them: ``InfeasibleError``), soft goals are met when possible; the summary says which is which."""

    name: str
    is_hard: bool

    def optimize(self, ctx: PlanningContext) -> None:
        """Change ``ctx.assignment`` towards this goal, only by moves earlier goals accept."""

    def accepts(self, ctx: PlanningContext, key: Key, replicas: Sequence[int]) -> bool:
        """Whether this goal tolerates partition ``key`` getting the broker list ``replicas``. Of a
        broker that may receive and joins ``replicas`` in place of another, it sees only its place
        (``PlanningContext.receiver_place``)."""

    def verdict(self, intents: Intents, summary: PlanSummary) -> Verdict | None:
        """Whether the plan meets this goal, from the metrics of its summary (None: no policy asks for
        it)."""


@dataclass(slots=True)
class Spent:
    moves: int = 0
    bytes: int = 0


@dataclass(slots=True)
class PlanningContext:
    """Everything goals read and write while one plan is computed."""

    snapshot: ClusterSnapshot
    intents: Intents
    eligibility: Eligibility
    assignment: Assignment
    trees: dict[str, RackTree]  # rack tree of each policy that has a rack rule
    soft_tree: RackTree  # the brokers' own racks (one level): tie-break for topics without a rack rule
    done: list[Goal] = field(default_factory=list)
    spent: dict[str, Spent] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    # A goal whose ``accepts`` judges each broker by its own load (the network goals) is done: receivers
    # of one place no longer share a verdict, and leader reorders are checked too (``reorder_ok``).
    per_broker_rules: bool = False
    # The snapshot's partitions the hard rules would change (``repairs.repair_reasons``), when known before
    # the goals run (the local engine's copy beside the plan selects them, spark/beside.py, as the Spark
    # engine's analysis does); None: the hard goal screens every partition and asks each suspect.
    repairs: frozenset[Key] | None = None
    _balanced: dict[str, frozenset[str]] = field(default_factory=dict, repr=False)  # balanced_topics

    @staticmethod
    def of(snapshot: ClusterSnapshot, intents: Intents) -> PlanningContext:
        elig = Eligibility.of(snapshot, intents)
        receivers = [b for b in elig.dirs if elig.may_receive(b)]
        trees = {
            p.name: RackTree.of(elig.racks, p.rack_awareness, receivers)
            for p in intents.policies
            if p.rack_awareness is not None
        }
        soft = RackTree.of(elig.racks, RackAwareness(separator="\0", levels=1), receivers)
        return PlanningContext(snapshot, intents, elig, Assignment.of(snapshot, intents, elig), trees, soft)

    def tree_for(self, key: Key) -> RackTree | None:
        policy = self.assignment.policy(key)
        return None if policy is None else self.trees.get(policy.name)

    def accepts(self, key: Key, replicas: Sequence[int]) -> bool:
        return all(g.accepts(self, key, replicas) for g in self.done)

    def receiver_place(self, key: Key) -> Callable[[int], Hashable]:
        """What every goal's ``accepts`` sees of a broker that may receive and joins ``key``'s replicas
        in place of another: its place in the partition's rack tree (one place for every broker without
        a tree). Brokers of one place get one verdict, so a search for a destination skips a place once
        one of its brokers was rejected (the brokers of a rack spread's other units, tens per move)."""
        if self.per_broker_rules:
            return _itself
        tree = self.tree_for(key)
        return _anywhere if tree is None else tree.place

    def reorder_ok(self, key: Key, replicas: Sequence[int]) -> bool:
        """Whether a reorder of ``key``'s replicas (a new preferred leader, no data moved) is accepted:
        always, unless a goal judging brokers by their network load is done (``per_broker_rules``), or it
        keeps a replica on a broker whose every dir is cordoned (``Eligibility.pins``: Kafka refuses it)."""
        if self.eligibility.pinned:
            original = self.snapshot.partition(*key)
            if original is not None and self.eligibility.pins(original.replicas, replicas):
                return False
        return not self.per_broker_rules or self.accepts(key, replicas)

    def held_dir(self, key: Key, broker: int) -> tuple[bool, str | None]:
        """Whether the snapshot has this partition's replica on ``broker``, and on which dir (None when
        unknown). The balance goals redirect replicas the plan moves anyway before those it does not."""
        original = self.snapshot.partition(*key)
        if original is None or broker not in original.replicas:
            return False, None
        return True, original.log_dirs[original.replicas.index(broker)]

    def balanced_topics(self, goal: str) -> frozenset[str]:
        """The topics whose enforced policy asks for ``goal`` (brokers, log_dirs, leaders): the only
        ones that goal moves or reorders. Computed once per goal (the broker goal asks per broker)."""
        found = self._balanced.get(goal)
        if found is None:
            found = self._balanced[goal] = frozenset(
                t
                for t, p in self.assignment.topic_policy.items()
                if p is not None and p.enforced and getattr(p.balance, goal)
            )
        return found

    def tolerance(self, goal: str) -> float | None:
        """The tightest tolerance of the policies asking for ``goal`` (brokers, log_dirs, leaders);
        None when no policy asks for it."""
        return requested_tolerance(self.intents, goal)

    def within_budget(self, policy: PlacementPolicy, size: int) -> bool:
        spent = self.spent.get(policy.name, Spent())
        budget = policy.move_budget
        if budget.max_moves and spent.moves + 1 > budget.max_moves:
            return False
        return not (budget.max_bytes and spent.bytes + size > budget.max_bytes)

    def charge(self, policy: PlacementPolicy, size: int, moves: int = 1) -> None:
        """Count ``moves`` partition moves of ``size`` bytes in all against ``policy``'s budget."""
        spent = self.spent.setdefault(policy.name, Spent())
        spent.moves += moves
        spent.bytes += size


def _itself(broker: int) -> int:
    """Each broker its own place (``per_broker_rules``)."""
    return broker


def _anywhere(broker: int) -> None:
    """The one place of every broker for a partition without a rack rule."""
    return None


def balance_verdict(intents: Intents, goal: str, value: float | None) -> Verdict | None:
    """A balance goal (``balance.<goal>``: brokers, log_dirs, leaders) measured as max/mean ``value``:
    met within 1 + the tightest tolerance asked (None: no policy asks for it; no value: nothing to
    balance)."""
    tol = requested_tolerance(intents, goal)
    if tol is None:
        return None
    target = 1 + tol
    return Verdict(value is None or value <= target + 1e-9, value, round(target, 4))


def requested_tolerance(intents: Intents, goal: str) -> float | None:
    """The tightest tolerance among policies whose ``balance.<goal>`` is set (None if none is)."""
    wanted = [p.balance.tolerance for p in intents.policies if getattr(p.balance, goal)]
    return min(wanted) if wanted else None
