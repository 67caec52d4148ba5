"""The planner's entry point: snapshot + intents -> plan + summary (a pure, deterministic function).

Steps: validate the intents against the snapshot (unknown brokers or dirs are bad input), run the goals
in priority order on a working assignment (hard placement first, then broker, dir and leader balance,
each accepting only moves the earlier ones allow), diff the result against the snapshot into Kafka's
reassignment format, order it into batches and measure it. Advise-mode policies are planned too, but
their extra moves are only reported (``advisories``), never put in the plan.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from ..model.errors import InfeasibleError
from ..model.intents import Intents, validate_against
from ..model.plan import ANY_DIR, PartitionTarget, Plan
from ..model.snapshot import ClusterSnapshot
from . import batching, headroom, plan_quality, summary_parts, traffic_quality
from .context import Goal, PlanningContext
from .goals import default_goals
from .plan_summary import Metrics, PlanSummary
from .state import Eligibility, Key
from .summary_parts import Advisories, GoalEntry


@dataclass(frozen=True, slots=True)
class PlanResult:
    """A plan and its summary (moves, bytes, lower bound, balance, violations, batches), and the tally of
    the partitions the summary was made from (under the enforced intents): a report of the same plan on
    the same snapshot reuses it (``report.build_report``) instead of counting every partition again."""

    plan: Plan
    summary: PlanSummary
    tally: plan_quality.Tally | None = field(default=None, compare=False, repr=False)


Optimizer = Callable[[ClusterSnapshot, Intents], Plan]
Measure = Callable[
    [ClusterSnapshot, Plan, plan_quality.Scope], plan_quality.Tally
]  # default: ``plan_quality.tally``
# default: ``batching.batches``
Batches = Callable[[ClusterSnapshot, Plan, Eligibility, int], list[list[str]]]


def optimize(
    snapshot: ClusterSnapshot,
    intents: Intents,
    goals: list[Goal] | None = None,
    repairs: Callable[[], frozenset[Key] | None] | None = None,
) -> Plan:
    """Run the goals and return only the partitions whose replicas, order or dirs change. ``repairs``
    gives, once the planning state is built, the partitions the hard rules would change when they are
    known already (``PlanningContext.repairs``)."""
    ctx = PlanningContext.of(snapshot, intents)
    if repairs is not None:
        ctx.repairs = repairs()
    run_goals(ctx, goals if goals is not None else default_goals())
    return diff(snapshot, ctx)


def run_goals(ctx: PlanningContext, goals: list[Goal]) -> None:
    for goal in goals:
        goal.optimize(ctx)
        ctx.done.append(goal)


def diff(snapshot: ClusterSnapshot, ctx: PlanningContext) -> Plan:
    """The working assignment as a plan: only partitions whose replicas, order or dirs changed (of
    those the goals set, ``Assignment.touched``: only those are compared). They are taken in the
    assignment's order, the snapshot's, which a snapshot of the cluster has sorted as the plan is: the
    plan's sort then finds them in order (sorting them from the set's order took a second at 1M)."""
    a = ctx.assignment
    original_of, touched, dirs_of = snapshot.partition, a.touched, a.dirs
    targets: list[PartitionTarget] = []
    for key, replicas in a.replicas.items():
        if key not in touched:
            continue
        p = original_of(*key)
        if p is None:  # (added, not the snapshot's: not a change of it)
            continue
        reps, dirs = tuple(replicas), tuple(dirs_of[key])
        if reps == p.replicas and dirs == p.log_dirs:
            continue
        if None in dirs:
            dirs = tuple(d if d is not None else ANY_DIR for d in dirs)
        targets.append(PartitionTarget(p.topic, p.partition, reps, dirs))  # type: ignore[arg-type]
    return Plan.of(targets)


def compute_plan(
    snapshot: ClusterSnapshot,
    intents: Intents,
    *,
    max_moves_per_broker: int = batching.MAX_PER_BROKER,
    optimizer: Optimizer | None = None,
    measure: Measure | None = None,
    batches: Batches | None = None,
) -> PlanResult:
    """The plan for all active intents of one cluster, with its summary (docs/architecture.md).

    ``optimizer`` computes the targets (default: in-process ``optimize``; the Spark engine passes its
    sharded one), ``measure`` tallies the partitions for the summary (default: in-process; the Spark
    engine tallies in its tasks), ``batches`` orders the plan into batches (default: ``batching.batches``;
    the Spark engine orders its plan while its tasks tally it); validation, advisories and the summary
    are the same for every engine."""
    run = optimizer or optimize
    validate_against(intents, snapshot)
    enforced = intents.enforced_only()
    plan = run(snapshot, enforced)
    tallied: list[plan_quality.Tally] = []

    def measured(s: ClusterSnapshot, p: Plan, scope: plan_quality.Scope) -> plan_quality.Tally:
        tallied.append((measure or plan_quality.tally)(s, p, scope))
        return tallied[-1]

    summary = summarize(snapshot, enforced, plan, max_moves_per_broker, measured, batches)
    refuse_over_headroom(summary)
    advised = [p for p in intents.policies if not p.enforced]
    if advised:
        try:
            full = run(snapshot, intents)
        except InfeasibleError as e:  # advice that cannot be followed must not block the enforced plan
            advice = Advisories(tuple(p.name for p in advised), e.message)
            return PlanResult(plan, replace(summary, advisories=advice), tallied[0])
        extra = Plan.of([t for t in full.partitions if plan.by_key().get(t.key) != t])
        moved = plan_quality.movement(snapshot, extra)
        names = tuple(p.name for p in advised)
        advice = Advisories(names, None, moved["partitionsChanged"], moved["bytesToMove"], extra)
        summary = replace(summary, advisories=advice)
    return PlanResult(plan, summary, tallied[0])


def summarize(
    snapshot: ClusterSnapshot,
    intents: Intents,
    plan: Plan,
    max_moves_per_broker: int,
    measure: Measure | None = None,
    batches: Batches | None = None,
) -> PlanSummary:
    """The plan's metrics (``metrics``) from one tally of the partitions, its batches, under-replicated
    partitions and goals (the intents are valid for the snapshot)."""
    scope = plan_quality.Scope.of(snapshot, intents)
    # (the batches first: the local engine's copy shifts the plan's entries into the tally meanwhile)
    order = (batches or batching.batches)(snapshot, plan, scope.elig, max_moves_per_broker)
    found = (measure or plan_quality.tally)(snapshot, plan, scope)
    metrics = found.evaluation(scope, plan.plan_id)
    net = traffic_quality.traffic(snapshot, plan, intents, scope.active, _asks_network(intents))
    if net is not None:  # (only with traffic or capacities: summaries without them are as before)
        metrics = replace(
            _bound_network(metrics, net.network_in_bound),
            balance_before=replace(metrics.balance_before, traffic=net.before),
            balance_after=replace(metrics.balance_after, traffic=net.after),
        )
    summary = PlanSummary.of(
        metrics,
        batches=summary_parts.Batches(len(order), max_moves_per_broker, tuple(map(tuple, order))),
        under_replicated_in_plan=tuple(sorted(found.under_replicated)),
        traffic=net.section if net is not None else None,
        disk_headroom=headroom.summary(
            snapshot,
            intents.max_disk_share,
            found.before.dir_bytes,
            found.after.dir_bytes,
            intents.disk_per_log_dir,
        ),
        goals=(),
    )
    return replace(summary, goals=goal_report(intents, summary))


def refuse_over_headroom(summary: PlanSummary) -> None:
    """Never a plan that breaks the disk headroom limit, whichever engine made it: a plan that leaves a
    dir above it (the summary's ``capacity`` violation) is refused, naming the fullest dir."""
    after = summary.violations_after
    if after is None or not after.capacity:
        return
    disk = summary.disk_headroom
    top = disk.fullest
    assert top is not None  # (a volume above the limit after the plan is the fullest's)
    raise headroom.refused(
        disk.max_disk_share,
        (top.broker, top.path),
        top.share_after,
        f"the plan leaves {after.capacity} volume(s) above the limit",
    )


def _bound_network(metrics: Metrics, network_in: int) -> Metrics:
    """Fold the network in term into the lower bound: its copies leave brokers that keep data, as the
    drain, rack-repair and balance copies do (one copy may serve both), never the decommission and
    replication-factor ones (``metrics``' module docstring)."""
    lb = metrics.lower_bound
    if lb is None:
        return metrics
    forced = lb.decommission + lb.rf_growth
    lb = replace(lb, network_in=network_in, total=forced + max(lb.total - forced, network_in))
    moved = metrics.bytes_to_move
    ratio = round(moved / lb.total, 4) if lb.total else None
    return replace(metrics, lower_bound=lb, lower_bound_bytes=lb.total, bytes_over_lower_bound=ratio)


def _asks_network(intents: Intents) -> bool:
    return any(p.balance.network_in or p.balance.network_out for p in intents.policies)


def goal_report(intents: Intents, summary: PlanSummary) -> tuple[GoalEntry, ...]:
    """Each goal a policy asks for (the hard one always) with its value after the plan, whether it is
    met (``Goal.verdict``) and whether it is hard.

    A balance goal can stay unmet by design: rack spread may force uneven brokers (a data centre with
    fewer brokers holds as many replicas as the others), a move budget may stop it, or a single
    partition may be larger than a dir's fair share. The plan is still valid; the summary says so,
    and when broker balance is provably out of reach (``reach.py``) its entry says why
    (``unreachable``), distinct from a goal the planner merely failed to meet.
    """
    report: list[GoalEntry] = []
    for goal in default_goals():
        found = goal.verdict(intents, summary)
        if found is not None:
            entry = GoalEntry(
                goal.name, goal.is_hard, found.met, found.value, found.target, found.unreachable
            )
            report.append(entry)
    return tuple(report)
