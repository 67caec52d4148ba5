"""Exact reference for small instances: the fewest bytes any plan meeting the planner's rules can move.

A CP-SAT model (OR-Tools, a ``bench`` extra, never needed by the product) over the planner's own
definitions, read from ``kafka_placement.planning`` so the two cannot drift:

- one boolean per (partition, broker that may hold it): a current holder that may keep the replica
  (``Eligibility.may_keep`` / ``broker_may_keep``, a drained dir's replica through a local copy), or a
  broker that may receive a new one (``Eligibility.may_receive``); exactly the target RF per partition;
- a partition that breaks no hard rule and whose policy does not ask for broker balance stays put
  (the planner never moves it either);
- KIP-879 spread (``RackTree``): at every unit holding replicas, a child that is not full holds at most
  one replica fewer than any sibling; full = every member broker under it holds one;
- broker balance as ``BrokerBalanceGoal`` defines it: on every broker that keeps data, bytes after
  <= its limit (planning/shares.py: (1 + tolerance) x (final bytes / those brokers), or its share by disk
  capacity where brokers' disks differ), when a policy asks for it; when no assignment can
  meet it the model is solved without it and the result says ``balance unreachable``;
- with ``dirs=True`` (tight-capacity instances) one boolean per (partition, broker, dir) too, and each
  dir's bytes after <= its bytes before + its usable bytes (the planner's ``Assignment.free``: bytes
  leaving a dir free room for bytes entering it); new replicas only on dirs that may receive;
- with ``dirs=True`` and a policy asking for dir balance, dir balance as ``DirBalanceGoal`` defines it:
  on every broker that keeps data in two dirs or more (not drained, online), each such dir's bytes after
  <= (1 + tolerance) x the broker's bytes after / those dirs (equal volumes; the bench draws no other
  with dir balance); the partitions of the topics asking for it may then change dirs (and brokers).

The objective is what the summary calls ``bytesToMove``: network copies (a replica on a broker that did
not hold it) plus local copies (a kept replica whose dir changes: forced off a drained dir, by the
capacity model or by dir balance). Leader balance moves no bytes and is left out. The planner's plan is
given as a hint, so the solver starts from it.
"""

from __future__ import annotations

from dataclasses import dataclass

from ortools.sat.python import cp_model

from kafka_placement.model.intents import Intents
from kafka_placement.model.plan import Plan
from kafka_placement.model.snapshot import ClusterSnapshot
from kafka_placement.planning import shares
from kafka_placement.planning.context import PlanningContext, requested_tolerance
from kafka_placement.planning.goals.replica_placement import needs_repair
from kafka_placement.planning.plan_quality import apply_plan
from kafka_placement.planning.targets import replication_factor

Key = tuple[str, int]


@dataclass(frozen=True, slots=True)
class Optimum:
    """What the solver proved: ``bytes`` of its best plan, ``bound`` the proven lower end."""

    status: str  # optimal | feasible | infeasible | unknown
    bytes: int | None
    bound: int | None
    balance_reachable: bool | None  # None: no balance asked
    replicas: dict[Key, tuple[int, ...]]
    seconds: float
    dirs: dict[Key, tuple[str, ...]] | None = None  # with ``dirs=True``: each replica's dir, as ``replicas``

    @property
    def exact(self) -> bool:
        return self.status == "optimal"


def solve(
    snapshot: ClusterSnapshot,
    intents: Intents,
    *,
    hint: Plan | None = None,
    dirs: bool = False,
    time_limit: float = 30.0,
    workers: int = 1,
) -> Optimum:
    """The optimum under the rules and, when reachable, the requested broker balance."""
    tol = requested_tolerance(intents, "brokers")
    if tol is None:
        return _solve(snapshot, intents, None, hint, dirs, time_limit, workers, None)
    res = _solve(snapshot, intents, tol, hint, dirs, time_limit, workers, True)
    if res.status != "infeasible":
        return res
    return _solve(snapshot, intents, None, hint, dirs, time_limit, workers, False)


def _solve(
    snapshot: ClusterSnapshot,
    intents: Intents,
    tol: float | None,
    hint: Plan | None,
    dirs: bool,
    time_limit: float,
    workers: int,
    reachable: bool | None,
) -> Optimum:
    ctx = PlanningContext.of(snapshot, intents)
    e, a = ctx.eligibility, ctx.assignment
    m = cp_model.CpModel()
    hinted = apply_plan(snapshot, hint) if hint is not None else None
    x: dict[tuple[Key, int], cp_model.IntVar] = {}
    y: dict[tuple[Key, int, str], cp_model.IntVar] = {}
    cost: list[cp_model.LinearExprT] = []
    fixed_cost = 0
    dir_tol = requested_tolerance(intents, "log_dirs") if dirs else None
    for p in snapshot.partitions:
        key, size = p.key, p.size_bytes
        rf = replication_factor(ctx, key)
        policy = a.policy(key)
        movable = needs_repair(ctx, key) or (
            policy is not None
            and policy.enforced
            and (
                (policy.balance.brokers and tol is not None)
                or (policy.balance.log_dirs and dir_tol is not None)
            )
        )
        where = dict(zip(p.replicas, p.log_dirs, strict=True))
        if not movable:
            continue  # stays as it is: no variable, its load is a constant below
        for b in sorted(e.dirs):
            if b in where:
                if b in e.decommissioned or not e.broker_may_keep(b):
                    continue
            elif not e.may_receive(b):
                continue
            ok_dirs = [
                d
                for d in e.dirs[b]
                if (b, d) not in e.drained
                and (d == where.get(b) or (e.dir_may_receive(b, d) and (b, d) not in e.offline))
            ]
            if not ok_dirs:
                continue
            var = m.new_bool_var(f"x{key}{b}")
            x[(key, b)] = var
            if b not in where:
                cost.append(size * var)
            if dirs:
                ys = []
                for d in ok_dirs:
                    yv = m.new_bool_var(f"y{key}{b}{d}")
                    y[(key, b, d)] = yv
                    ys.append(yv)
                    if hinted is not None:
                        q = hinted.partition(*key)
                        placed = q is not None and dict(zip(q.replicas, q.log_dirs, strict=True)).get(b)
                        m.add_hint(yv, placed == d)
                m.add(sum(ys) == var)
                if b in where and where[b] in ok_dirs:
                    cost.append(size * (var - y[(key, b, str(where[b]))]))
                elif b in where:
                    cost.append(size * var)  # its dir is drained: a local copy
            elif b in where and where[b] is not None and (b, where[b]) in e.drained:
                cost.append(size * var)  # kept through a local copy off the drained dir
        holders = [x[(key, b)] for b in sorted(e.dirs) if (key, b) in x]
        m.add(sum(holders) == rf)
        if hinted is not None:
            q = hinted.partition(*key)
            chosen = set(q.replicas) if q is not None else set()
            for b in sorted(e.dirs):
                if (key, b) in x:
                    m.add_hint(x[(key, b)], b in chosen)
        tree = ctx.tree_for(key)
        if tree is not None:
            _spread(m, tree, key, {b: x[(key, b)] for b in sorted(e.dirs) if (key, b) in x})
    if tol is not None:
        active = e.active_brokers
        final_total = sum(replication_factor(ctx, p.key) * p.size_bytes for p in snapshot.partitions)
        limits = shares.limits(e.capacity, active, final_total, tol)  # the planner's one definition
        for b in active:
            m.add(_load(snapshot, x, b, fixed=True) <= int(limits[b]))
    if dirs:
        # one row per volume (planning/headroom.py: two dirs of one filesystem share it), its bytes
        # after within its bytes before plus its room under the disk headroom limit (none when it is
        # above it already: its replicas may stay or leave)
        held: dict[tuple[int, str], int] = {}
        for p in snapshot.partitions:
            for q, r in zip(p.replicas, p.log_dirs, strict=True):
                if r is not None:
                    held[(q, r)] = held.get((q, r), 0) + p.size_bytes
        rooms = e.rooms(held)
        groups: dict[tuple[int, str], list[tuple[int, str]]] = {}
        for place, v in e.volume.items():
            groups.setdefault(v, []).append(place)
        for v, places in groups.items():
            if all(place in e.drained for place in places):
                continue
            before = sum(held.get(place, 0) for place in places)
            terms: list[cp_model.LinearExprT] = []
            const = 0
            for b, d in places:
                for p in snapshot.partitions:
                    if (p.key, b, d) in y:
                        terms.append(p.size_bytes * y[(p.key, b, d)])
                    elif (p.key, b) not in x and dict(zip(p.replicas, p.log_dirs, strict=True)).get(b) == d:
                        const += p.size_bytes  # a partition that cannot change
            m.add(sum(terms) + const <= before + max(rooms[v], 0))
    if dir_tol is not None:
        _dir_balance(m, snapshot, ctx, x, y, dir_tol)
    m.minimize(sum(cost) + fixed_cost)
    solver = cp_model.CpSolver()
    # deterministic work units, not wall time: the same instance gives the same answer on a busy machine
    solver.parameters.max_deterministic_time = time_limit
    solver.parameters.max_time_in_seconds = 10 * time_limit
    solver.parameters.num_workers = workers
    solver.parameters.random_seed = 1
    code = solver.solve(m)
    name = {
        cp_model.OPTIMAL: "optimal",
        cp_model.FEASIBLE: "feasible",
        cp_model.INFEASIBLE: "infeasible",
    }.get(code, "unknown")
    if name in ("infeasible", "unknown"):
        known = False if reachable is False else None  # (proven unreachable before; else undecided)
        return Optimum(name, None, None, known, {}, solver.wall_time)
    replicas: dict[Key, tuple[int, ...]] = {}
    placed: dict[Key, tuple[str, ...]] = {}
    for p in snapshot.partitions:
        if any((p.key, b) in x for b in e.dirs):
            replicas[p.key] = tuple(
                b for b in sorted(e.dirs) if (p.key, b) in x and solver.value(x[(p.key, b)])
            )
            if dirs:
                placed[p.key] = tuple(
                    next(d for d in e.dirs[b] if (p.key, b, d) in y and solver.value(y[(p.key, b, d)]))
                    for b in replicas[p.key]
                )
    return Optimum(
        name,
        round(solver.objective_value),
        round(solver.best_objective_bound),
        reachable,
        replicas,
        solver.wall_time,
        placed if dirs else None,
    )


def _dir_balance(
    m: cp_model.CpModel,
    snapshot: ClusterSnapshot,
    ctx: PlanningContext,
    x: dict[tuple[Key, int], cp_model.IntVar],
    y: dict[tuple[Key, int, str], cp_model.IntVar],
    tol: float,
) -> None:
    """Each dir that keeps data within (1 + tol) x its broker's bytes per such dir, after the plan."""
    e = ctx.eligibility
    scale = 10_000  # (1 + tol) in integer ten-thousandths
    for b in e.active_brokers:
        paths = [d for d in e.dirs[b] if (b, d) not in e.drained and (b, d) not in e.offline]
        if len(paths) < 2:
            continue
        broker = _load(snapshot, x, b, fixed=True)
        for d in paths:
            terms: list[cp_model.LinearExprT] = []
            const = 0
            for p in snapshot.partitions:
                if (p.key, b, d) in y:
                    terms.append(p.size_bytes * y[(p.key, b, d)])
                elif (p.key, b) not in x and dict(zip(p.replicas, p.log_dirs, strict=True)).get(b) == d:
                    const += p.size_bytes  # a partition that cannot change
            m.add(scale * len(paths) * (sum(terms) + const) <= round(scale * (1 + tol)) * broker)


def _load(
    snapshot: ClusterSnapshot, x: dict[tuple[Key, int], cp_model.IntVar], broker: int, fixed: bool
) -> cp_model.LinearExprT:
    """Bytes on ``broker`` after the plan: variables of movable partitions, constants of the rest."""
    terms: list[cp_model.LinearExprT] = []
    const = 0
    for p in snapshot.partitions:
        if (p.key, broker) in x:
            terms.append(p.size_bytes * x[(p.key, broker)])
        elif fixed and broker in p.replicas and not any((p.key, b) in x for b in p.replicas):
            const += p.size_bytes
    return sum(terms) + const


def _spread(m: cp_model.CpModel, tree: object, key: Key, xs: dict[int, cp_model.IntVar]) -> None:
    """KIP-879 maximal spread of one partition over ``tree`` (a ``RackTree``)."""
    from kafka_placement.planning.topology import RackTree

    assert isinstance(tree, RackTree)
    levels = tree.levels
    # members under each unit (brokers that may take a new replica) and candidates under each unit
    units: dict[tuple[str, ...], list[int]] = {}
    for b in xs:
        p = tree.path[b]
        for depth in range(len(p) + 1):
            units.setdefault(p[:depth], []).append(b)
    members: dict[tuple[str, ...], int] = {}
    for b in tree.members:
        p = tree.path[b]
        for depth in range(len(p) + 1):
            members[p[:depth]] = members.get(p[:depth], 0) + 1
    for unit in sorted(units):
        if len(unit) >= levels:
            continue
        kids = sorted({tree.path[b][: len(unit) + 1] for b in units[unit]})
        if len(kids) < 2:
            continue
        count = {c: sum(xs[b] for b in units[c]) for c in kids}
        for c2 in kids:
            mem = [xs[b] for b in units[c2] if b in tree.members]
            n_mem = members.get(c2, 0)
            if n_mem == 0:
                continue  # no member: full whenever it holds only its non-member holders
            open_c2 = m.new_bool_var(f"open{key}{c2}")
            m.add(sum(mem) <= n_mem - 1).only_enforce_if(open_c2)
            m.add(sum(mem) >= n_mem).only_enforce_if(~open_c2)
            for c1 in kids:
                if c1 != c2:
                    m.add(count[c1] - count[c2] <= 1).only_enforce_if(open_c2)
