"""Exact placement on small clusters: the fewest bytes copied under the hard rules (and broker and dir
balance), as a mixed-integer program solved by HiGHS (scipy's ``milp``). Pure: no I/O, no clock.

The greedy goals and the bounded repacking searches are fast at any size but can miss the cheapest plan
by a few percent (a data centre that must sit just under the balance threshold, a dir that fits its
replicas only in one packing) or, on very full dirs, find no packing where one exists. On a small
problem the exact program is cheap (well under a second for a few thousand variables; the joint program
with dir balance below, up to a few seconds at its root), so the planner runs it there and takes its
placement when it copies fewer bytes, or when the greedy one misses the balance the program meets, or
when the greedy searches found no packing at all.

The model (the same rules the hard goal, ``BrokerBalanceGoal`` and ``DirBalanceGoal`` apply):

- one binary per (partition, broker that may hold it) for each *movable* partition: one the hard goal
  must change (``repair_reasons`` on the snapshot: a decommissioned broker, a drained or reactive
  cordoned dir, the replication factor, a broken rack spread) or, when broker balance is asked, one of
  a topic whose enforced policy asks for it; a broker may hold it when it holds it in the snapshot and
  may keep it (not decommissioned, a dir that is not drained, the replica not on a failed dir, and not a
  broker whose every dir Kafka has cordoned: ``Eligibility.pins``; a partition with a replica there is
  not placed for balance), or may receive new replicas; exactly the target replication factor per
  partition;
- when any dir's usable bytes are known, one binary per (partition, broker, dir) too: the replica stays
  on its dir when it may (no copy), or takes a dir that may receive (a local copy when its broker held
  it); each volume's bytes after stay within its bytes before plus its room under the disk headroom
  limit (``headroom.room``, as ``Assignment.free``: one row per volume);
  without known room the dirs are chosen afterwards as the hard goal chooses them (``best_dir``);
- KIP-879 spread (``RackTree``): at every unit holding replicas, a child that is not full (a member
  broker under it holds none) holds at most one replica fewer than any sibling (in the joint program
  below, a variable saying whether a child is full only where that can matter: a full child of m
  members beside a sibling two replicas above it needs 2m + 2 replicas, so below that replication
  factor the sibling rows hold for it full or not; with RF 3, every child. The same rows, smaller:
  they let the joint program of 112 partitions fit ``MAX_VARIABLES`` and found a plan 6% cheaper on
  another, but changed the bounded searches of the other programs chaotically, one full-dirs packing
  from 1.039 to 1.062 of its lower bound, so those keep the rows they were measured with);
- broker balance: every broker that keeps data holds at most its ``limit`` of bytes after the plan (the
  balance goal's limits, planning/shares.py: (1 + tolerance) x its share of the bytes after the plan);
- dir balance, where a policy asks for it (``DirRows``: the joint program, on dirs whether or not their
  room is known): one row per dir that keeps data on each broker with two or more, its bytes after <= its
  factor (``shares.dir_factors``, the dir balance goal's thresholds per byte) x the broker's bytes over
  those dirs after; the replicas the program does not place, of topics asking for dir balance, get dir
  binaries too where a local copy may be needed (on a broker out of dir balance in the greedy plan or
  holding a placed replica, those on a dir above its even share: each stays, or takes a dir that may
  receive for a local copy of its bytes). The brokers that receive replicas are so chosen with the dirs
  they land on: the program on brokers alone, with the dirs chosen after it, paid local copies a
  receiving broker's dirs then needed (3% above CP-SAT's best on the generalisation benchmark's dir
  balance family, 8.7% on another draw). Under ``Balanced`` it runs at its root node alone and stops at
  its ``JOINT_SOLUTIONS``-th improving solution (0.1-4.5 s of HiGHS's root on 40-120 partitions; a search
  beyond it, seconds more for fractions of a percent), and is not run at all where its linear relaxation
  (``relaxed``, milliseconds) lies within ``ROOM_FLOOR`` of the bar: a plan under the bar would lie that
  close to the relaxation, as 2 of the 54 plans its root found on 120 draws of the headroom test's
  generator did, while the roots so skipped there had spent up to 4 s finding nothing (docs/benchmarks.md);
  ``Exhaustive`` gives it the full work limits;
- objective: the bytes the plan copies as the summary counts them (``plan_quality.count_move``): a new replica
  copies ``copy_bytes``, a dir change within a broker ``size_bytes``; where only a plan cheaper than one
  already found is of use (``below``), a row keeps the objective under it and HiGHS is given it as its
  cutoff (``run_program``);
- narrowed where only a cheaper plan under broker balance is asked for (``narrow``: the greedy plan meets
  balance, and the effort is not ``Exhaustive``): a partition no hard rule asks to change and no rack rule
  spreads, placed for balance alone, gets no binary for a new replica on a broker that holds more than
  its limit in the snapshot (``over_limit``): that broker must shed bytes, so a replica it took would be
  shed again by another copy (under a rack rule such a broker may be the only one of a unit the spread
  must use: narrowing those too left a plan on 6 brokers in two racks at 1.0054x Exhaustive's, 1.0037x
  before). The program shrinks by those brokers (on a 23-broker scale-out of the generalisation
  benchmark from 3,197 binaries to 1,952), and its bounded search finds what the full program's did not
  within the same node budget. This is not a proof that the optimum never uses such a broker: a
  placement or a balance asked for at all, and every proof of "no solution", use the full program.

Bounds, deterministic (never wall time: the same input gives the same plan on a busy machine): the
program is built only when it has at most ``MAX_VARIABLES`` binaries, and HiGHS explores at most
``MAX_NODES`` branch-and-bound nodes and ``NODE_WORK`` nodes x binaries, and under the ``Balanced``
effort (the default; model/effort.py) stops once its best is proven within 0.5% of the optimum; the
``Fast`` effort does not run the program for quality (goals/exact_placement.py); a solution is taken only
after it is checked again with exact integers against every rule (``check``), so a rounding inside the
solver can never place a replica against a rule. The program is not built where the summary's own proofs
say it cannot win (``hopeless``: the greedy plan is within the gap of the lower bound, or broker balance,
which it would be run to meet, is proven out of reach), and the program on dirs is not run where the one on
brokers is proven to have no solution (``Solved.infeasible``). Not run with move budgets, preferred
brokers or network capacities (rules the program does not model): the greedy plan stands there.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..model.effort import BALANCED_GAP
from ..model.plan import Plan
from ..model.snapshot import PartitionState
from . import plan_quality, waiting
from .context import PlanningContext
from .rack_room import volume_room
from .repairs import repair_reasons
from .shares import dir_factors, dir_thresholds
from .state import DirKey, Key
from .targets import order_replicas, replication_factor, target_dirs
from .topology import RackTree

MAX_PARTITIONS = 5_000  # larger clusters are not even scanned for the program's partitions
MAX_VARIABLES = 5_000  # binaries of the program (x only: 200 partitions on 24 brokers is 4,800)
MAX_NODES = 5_000  # HiGHS branch-and-bound nodes, at most
JOINT_NODES = 1  # the joint program with dir balance, under Balanced: its root node alone
JOINT_SOLUTIONS = 5  # and at most this many improving solutions there
NODE_WORK = 3_000_000  # and at most this many (nodes x binaries): 600 nodes at 5,000 binaries
ROOM_FLOOR = 0.0015  # the joint program under Balanced: not run where its relaxation is this close to the bar
HIGHS_OPTIONS: dict[str, float | int] = {}
SLACK = 1e-6  # each dir balance row tightened by this share of its threshold (HiGHS's tolerances)
ROOT_SLACK = 1e-6  # each row widened by this share where only a proof of no solution is asked (root_only)

Placements = dict[Key, tuple[list[int], list[str | None]]]


@dataclass(frozen=True, slots=True)
class Answer:
    """What HiGHS answered: the values of its best solution (None: none within the bounds), and whether
    it proved that the program has no solution at all (not merely none found within the bounds)."""

    values: list[float] | None
    infeasible: bool = False


@dataclass(frozen=True, slots=True)
class Solved:
    """``solve``'s answer: the placement found (None: none), and whether none exists (proven): a
    narrower program (the same with dirs and their room) then has none either and is not run."""

    found: Placements | None
    infeasible: bool = False


@dataclass(frozen=True, slots=True)
class DirRows:
    """Dir balance in the program (``solve``'s ``dir_rows``): at ``tolerance``, on each of ``brokers``
    (of those with two dirs or more that keep data), the dirs' thresholds of ``shares.dir_thresholds``."""

    tolerance: float
    brokers: frozenset[int]


@dataclass(slots=True)
class Program:
    """The program under construction: objective, bounds and rows as sparse triples."""

    cost: list[float] = field(default_factory=list)
    rows: list[list[tuple[int, float]]] = field(default_factory=list)
    low: list[float] = field(default_factory=list)
    high: list[float] = field(default_factory=list)
    cutoff: float | None = None  # the objective a solution must not exceed (HiGHS's objective_bound)

    def var(self, cost: float = 0.0) -> int:
        self.cost.append(cost)
        return len(self.cost) - 1

    def row(self, terms: list[tuple[int, float]], low: float, high: float) -> None:
        self.rows.append(terms)
        self.low.append(low)
        self.high.append(high)


def applicable(ctx: PlanningContext) -> bool:
    """Whether the program may run: a cluster of at most ``MAX_PARTITIONS`` partitions whose intents
    ask only for rules it models (else the greedy plan stands)."""
    if len(ctx.snapshot.partitions) > MAX_PARTITIONS:
        return False
    for p in ctx.intents.policies:
        if p.preferred_brokers or p.move_budget.max_bytes or p.move_budget.max_moves:
            return False
    cap = ctx.intents.capacity
    if ctx.assignment.rate and cap is not None:
        return not any(cap.of(b).network_in or cap.of(b).network_out for b in ctx.eligibility.dirs)
    return True


def movable(ctx: PlanningContext, balance: bool) -> list[PartitionState]:
    """The partitions the program may place: those the hard goal changes (judged on the snapshot) and,
    with ``balance``, those of topics whose enforced policy asks for broker balance."""
    e, a = ctx.eligibility, ctx.assignment
    balanced = ctx.balanced_topics("brokers") if balance else frozenset()
    out = []
    for p in ctx.snapshot.partitions:
        if _repaired(ctx, p) or (
            p.topic in balanced
            and not waiting.no_in_sync_replica(e.dead, p.replicas, p.leader, p.isr)
            and e.pinned.isdisjoint(p.replicas)  # (a change must move that replica: balance leaves it)
        ):
            out.append(p)
        elif a.replicas[p.key] != list(p.replicas) or a.dirs[p.key] != list(p.log_dirs):
            return []  # a goal changed a partition the program would keep fixed: not this program's plan
    return out


def _repaired(ctx: PlanningContext, p: PartitionState) -> bool:
    """Whether the hard goal must change ``p`` (judged on the snapshot): ``repair_reasons``."""
    return bool(
        repair_reasons(
            ctx.eligibility,
            p.replicas,
            p.log_dirs,
            p.size_bytes,
            replication_factor(ctx, p.key),
            ctx.tree_for(p.key),
            p.leader,
            p.isr,
        )
    )


def over_limit(ctx: PlanningContext, limit: Mapping[int, int]) -> frozenset[int]:
    """The brokers holding more than their balance ``limit`` in the snapshot: each must shed bytes, so a
    replica one of them receives has to be shed again by another copy (``solve``'s narrowing)."""
    held: dict[int, int] = {}
    for p in ctx.snapshot.partitions:
        for b in p.replicas:
            held[b] = held.get(b, 0) + p.size_bytes
    return frozenset(b for b, most in limit.items() if held.get(b, 0) > most)


def sized(ctx: PlanningContext) -> bool:
    """Whether any dir's volume size is known (the program can then place replicas on dirs)."""
    return ctx.eligibility.sized


def worth(ctx: PlanningContext, now: int) -> int:
    """What a placement must copy less than to replace the greedy one that copies ``now``: under the
    ``Balanced`` effort at least ``BALANCED_GAP`` less (a program that can win no more is pruned at its
    root instead of searching to prove that nothing a fraction of a percent cheaper exists), under
    ``Exhaustive`` anything less."""
    if ctx.intents.effort == "Exhaustive":
        return now
    return min(now, int(now / (1 + BALANCED_GAP)) + 1)  # none cheaper: now <= (1 + gap) x the optimum


def hopeless(ctx: PlanningContext, now: int | None) -> bool:
    """Whether the program provably cannot give what it would be run for, by the summary's own proofs
    (``plan_quality``: the lower bound, and ``reach``'s proof that broker balance is out of reach): with
    ``now`` (the greedy plan keeps broker balance, copying ``now``), no plan copies less than
    ``worth(ctx, now)``; without it (the greedy plan misses broker balance, which the program is run to
    meet), no plan meets it. Either way HiGHS would spend most of its work limits proving what the
    bound already says (tens of seconds on 120 partitions with the volumes' sizes known)."""
    scope = plan_quality.Scope.of(ctx.snapshot, ctx.intents)
    found = plan_quality.tally(ctx.snapshot, Plan.of([]), scope).evaluation(scope, "")
    if now is None:
        return found.broker_balance_unreachable is not None
    return found.lower_bound_bytes is not None and found.lower_bound_bytes >= worth(ctx, now)


def narrow(ctx: PlanningContext, limit: Mapping[int, int] | None, below: int | None) -> bool:
    """Whether ``solve`` narrows its program: a cheaper plan under broker balance is asked for (``below``,
    ``limit``) and the effort is not ``Exhaustive``. Never where a placement or a balance is asked for
    at all, nor where the program's "no solution" is taken as a proof."""
    return limit is not None and below is not None and ctx.intents.effort != "Exhaustive"


def solve(
    ctx: PlanningContext,
    parts: Sequence[PartitionState],
    limit: Mapping[int, int] | None,
    below: int | None = None,
    dirs: bool = False,
    root_only: bool = False,
    dir_rows: DirRows | None = None,
) -> Solved:
    """The cheapest placement of ``parts`` (every other partition as the snapshot has it) under the
    hard rules and, with ``limit``, at most ``limit[b]`` bytes on every broker b that keeps data, copying
    fewer than ``below`` bytes when given; with ``dirs``, on dirs within their room (else brokers only:
    ``apply`` then chooses the dirs, and ``check`` tells whether they fit); none found when the program is
    too large or has no solution within its bounds (``Solved.infeasible``: proven to have none).

    The program on dirs is the one on brokers narrowed: the same brokers, each dir change costing its
    local copy on top, and each volume's room as rows more. So when the one on brokers is proven to have
    no solution (under ``below``), the one on dirs has none either. ``root_only``: whether a solution exists,
    asked of HiGHS's presolve and root node alone (no objective, no heuristics, one node: milliseconds
    where the volumes are short of room in all; a proof only, nothing is placed either way). ``dir_rows``:
    the joint program (on dirs, room known or not, with dir balance; module docstring), whose answer also
    gives new dirs to replicas of partitions not in ``parts`` (their brokers unchanged)."""
    if not parts:
        return Solved(None)
    e = ctx.eligibility
    dirs_mode = (dirs and sized(ctx)) or dir_rows is not None
    if dirs_mode and not all(d is not None for p in parts for d in p.log_dirs):
        return Solved(None)  # room is known but a replica's dir is not: the program cannot count its dir
    brokers = sorted(e.dirs)
    candidates: dict[Key, list[tuple[int, list[str]]]] = {}
    count = 0
    # Narrowed (a cheaper plan asked for, not under Exhaustive): a partition moved for balance alone,
    # under no rack rule, takes no new replica on a broker above its limit before the plan (module
    # docstring; a rack rule may leave such a broker the only one of a unit it must use)
    full = over_limit(ctx, limit) if limit is not None and narrow(ctx, limit, below) else frozenset()
    for p in parts:
        where = dict(zip(p.replicas, p.log_dirs, strict=True))
        shut = full if full and ctx.tree_for(p.key) is None and not _repaired(ctx, p) else frozenset()
        options = []
        for b in brokers:
            if b in shut and b not in where:
                continue
            ok = _dirs_for(ctx, p, b, where)
            if ok:
                options.append((b, ok))
                count += 1 + (len(ok) if dirs_mode else 0)
        candidates[p.key] = options
        if count > MAX_VARIABLES:
            return Solved(None)
    m = Program()
    x: dict[tuple[Key, int], int] = {}
    y: dict[tuple[Key, int, str], int] = {}
    for p in parts:
        key, where = p.key, dict(zip(p.replicas, p.log_dirs, strict=True))
        holders: list[tuple[int, float]] = []
        for b, ok in candidates[key]:
            held = b in where
            v = x[(key, b)] = m.var(0.0 if held else float(p.copy_bytes))
            holders.append((v, 1.0))
            if dirs_mode:
                ys = []
                for d in ok:
                    stays = held and d == where[b] and e.may_keep(b, d, p.size_bytes)
                    w = y[(key, b, d)] = m.var(0.0 if stays or not held else float(p.size_bytes))
                    ys.append((w, 1.0))
                m.row([*ys, (v, -1.0)], 0.0, 0.0)
            elif held and not e.may_keep(b, where[b], p.size_bytes):
                m.cost[v] = float(p.size_bytes)  # kept through a local copy off its dir
        rf = replication_factor(ctx, key)
        m.row(holders, rf, rf)
        tree = ctx.tree_for(key)
        if tree is not None:
            _spread(m, tree, {b: x[(key, b)] for b, _ in candidates[key]}, rf, compact=dir_rows is not None)
    moving = {p.key for p in parts}
    staying = _staying(ctx, m, y, parts, dir_rows) if dir_rows is not None else {}
    if len(m.cost) > MAX_VARIABLES:
        return Solved(None)
    fixed_broker: dict[int, int] = dict.fromkeys(brokers, 0)
    fixed_dir: dict[DirKey, int] = {}
    for q in ctx.snapshot.partitions:
        if q.key in moving:
            continue
        free = staying.get(q.key, ())
        for b, path in zip(q.replicas, q.log_dirs, strict=True):
            fixed_broker[b] = fixed_broker.get(b, 0) + q.size_bytes
            if path is not None and b not in free:
                fixed_dir[(b, path)] = fixed_dir.get((b, path), 0) + q.size_bytes
    on_dir: dict[DirKey, list[tuple[int, float]]] = {}
    for (key, b, d), w in y.items():
        on_dir.setdefault((b, d), []).append((w, float(ctx.assignment.size[key])))
    if limit is not None:
        for b in e.active_brokers:
            terms = [(x[(p.key, b)], float(p.size_bytes)) for p in parts if (p.key, b) in x]
            m.row(terms, float("-inf"), float(limit[b] - fixed_broker.get(b, 0)))
    if below is not None:  # only a cheaper placement is of use: a bound that prunes the search, as a
        # row and as HiGHS's cutoff (``run_program``)
        m.row([(i, c) for i, c in enumerate(m.cost) if c], float("-inf"), float(below - 1))
        m.cutoff = float(below - 1)
    room = volume_room(ctx) if dirs_mode and sized(ctx) else {}
    for places, most in room.values():  # one row per volume (two dirs on one filesystem share it)
        terms = [t for place in places for t in on_dir.get(place, ())]
        if terms:
            m.row(terms, float("-inf"), float(most - sum(fixed_dir.get(d, 0) for d in places)))
    if dir_rows is not None:
        _dir_balance(ctx, m, dir_rows, on_dir, fixed_dir)
    if root_only:  # whether a solution exists: no objective, and each row widened by a millionth so
        # that only a clear shortfall, never HiGHS's tolerances, proves that none does
        m.cost = [0.0] * len(m.cost)
        m.cutoff = None
        m.low = [v - ROOT_SLACK * max(abs(v), 1.0) for v in m.low]
        m.high = [v + ROOT_SLACK * max(abs(v), 1.0) for v in m.high]
        return Solved(None, run_program(m, root_only=True).infeasible)
    # HiGHS's gap is (found - bound) / found: found <= (1 + BALANCED_GAP) x the optimum
    gap = BALANCED_GAP / (1 + BALANCED_GAP)
    if ctx.intents.effort == "Exhaustive":
        answer = run_program(m)
    elif dir_rows is not None:  # (module docstring: the joint program at its root, a few solutions,
        # not run where its relaxation leaves under ``ROOM_FLOOR`` of the bar to win)
        if below is not None and not _room(m, below):
            return Solved(None)
        answer = run_program(m, gap, nodes=JOINT_NODES, solutions=JOINT_SOLUTIONS)
    else:
        answer = run_program(m, gap)
    values = answer.values
    if values is None:
        return Solved(None, answer.infeasible)
    found: Placements = {}
    for p in parts:
        chosen = [b for b, _ in candidates[p.key] if values[x[(p.key, b)]] > 0.5]
        order = order_replicas(p.replicas, chosen)
        if dirs_mode:
            picked = {b: d for b, ok in candidates[p.key] for d in ok if values[y[(p.key, b, d)]] > 0.5}
            found[p.key] = (order, [picked.get(b) for b in order])
        else:
            found[p.key] = (order, [])  # dirs chosen when applied
    moved: dict[Key, dict[int, str]] = {}
    for (key, b, d), w in y.items():
        if key in staying and values[w] > 0.5:
            moved.setdefault(key, {})[b] = d
    for key, picked in moved.items():
        replicas, now = ctx.assignment.replicas[key], ctx.assignment.dirs[key]
        found[key] = (list(replicas), [picked.get(b, d) for b, d in zip(replicas, now, strict=True)])
    return Solved(found)


def dirs_met(ctx: PlanningContext, broker: int, tolerance: float) -> bool:
    """The broker's dirs that keep data are within their thresholds (exact integers, the dir balance
    goal's own: ``shares.dir_thresholds``)."""
    a, e = ctx.assignment, ctx.eligibility
    paths = e.keeping_dirs(broker)
    if len(paths) < 2:
        return True
    top = dir_thresholds(a.dir_bytes, broker, paths, tolerance, e.sizes.get(broker))
    return all(a.dir_bytes[(broker, d)] <= top[d] for d in paths)


def _staying(
    ctx: PlanningContext,
    m: Program,
    y: dict[tuple[Key, int, str], int],
    parts: Sequence[PartitionState],
    rows: DirRows,
) -> dict[Key, frozenset[int]]:
    """Dir variables for replicas the program does not place, of topics asking for dir balance, that a
    local copy may have to move: on each broker of ``rows`` out of dir balance in the plan so far (the
    greedy goals') or holding a replica the program places (which may leave it), those on a dir above its
    even share of the broker's bytes. Each stays on its broker and stays on its dir (no copy) or takes
    another that may receive (a local copy of its bytes, as the dir balance goal would copy it). Returns
    the brokers given variables per partition."""
    e, a = ctx.eligibility, ctx.assignment
    balanced = ctx.balanced_topics("log_dirs")
    losing = {b for p in parts for b in p.replicas}
    hot: set[DirKey] = set()
    for b in rows.brokers:
        paths = e.keeping_dirs(b)
        if len(paths) < 2 or (b not in losing and dirs_met(ctx, b, rows.tolerance)):
            continue
        factor = dir_factors(paths, 0.0, e.sizes.get(b))
        held = sum(a.dir_bytes[(b, d)] for d in paths)
        hot.update((b, d) for d in paths if a.dir_bytes[(b, d)] > factor[d] * held)
    moving = {p.key for p in parts}
    out: dict[Key, frozenset[int]] = {}
    for q in ctx.snapshot.partitions:
        if q.key in moving or q.topic not in balanced or not e.pinned.isdisjoint(q.replicas):
            continue
        free = []
        for b, home in zip(q.replicas, q.log_dirs, strict=True):
            if (b, home) not in hot or home is None:
                continue
            options = [d for d in e.keeping_dirs(b) if d != home and e.dir_may_receive(b, d)]
            if not options:
                continue
            if e.may_keep(b, home, q.size_bytes):
                options.append(home)
            ws = [m.var(0.0 if d == home else float(q.size_bytes)) for d in options]
            for d, w in zip(options, ws, strict=True):
                y[(q.key, b, d)] = w
            m.row([(w, 1.0) for w in ws], 1.0, 1.0)
            free.append(b)
        if free:
            out[q.key] = frozenset(free)
    return out


def _dir_balance(
    ctx: PlanningContext,
    m: Program,
    rows: DirRows,
    on_dir: Mapping[DirKey, list[tuple[int, float]]],
    fixed_dir: Mapping[DirKey, int],
) -> None:
    """Each dir that keeps data on the brokers of ``rows`` within its threshold after the plan: its bytes
    <= its factor (``shares.dir_factors``) x the broker's bytes over those dirs, tightened by ``SLACK`` of
    the threshold the snapshot gives it (HiGHS's tolerances; ``dirs_met`` judges in exact integers)."""
    e, a = ctx.eligibility, ctx.assignment
    for b in sorted(rows.brokers):
        paths = e.keeping_dirs(b)
        if len(paths) < 2:
            continue
        factor = dir_factors(paths, rows.tolerance, e.sizes.get(b))
        held = sum(fixed_dir.get((b, d), 0) for d in paths)
        scale = sum(a.dir_bytes[(b, d)] for d in paths)
        for d in paths:
            f = factor[d]
            terms: dict[int, float] = {}
            for other in paths:
                for w, size in on_dir.get((b, other), ()):
                    terms[w] = terms.get(w, 0.0) + size * ((1.0 if other == d else 0.0) - f)
            most = f * held - fixed_dir.get((b, d), 0) - SLACK * max(f * scale, 1.0)
            m.row(list(terms.items()), float("-inf"), most)


def apply(ctx: PlanningContext, found: Placements, limit: Mapping[int, int] | None) -> bool:
    """Set ``found`` on the working assignment (dirs the program did not choose: a kept replica stays on
    its dir when it may, any other takes ``best_dir`` as the hard goal's do); undone, and False, when
    ``check`` rejects the result."""
    a = ctx.assignment
    before = {k: (list(a.replicas[k]), list(a.dirs[k])) for k in found}
    for key, (replicas, dirs) in found.items():
        if not dirs:
            p = ctx.snapshot.partition(*key)
            assert p is not None
            dirs = target_dirs(ctx, dict(zip(p.replicas, p.log_dirs, strict=True)), replicas, p.size_bytes)
        a.set_placement(key, replicas, dirs)
    if check(ctx, found, limit):
        return True
    for key, (replicas, dirs) in before.items():
        a.set_placement(key, replicas, dirs)
    return False


def check(ctx: PlanningContext, keys: Iterable[Key], limit: Mapping[int, int] | None) -> bool:
    """Every rule again, in exact integers, on the working assignment: each partition of ``keys`` with
    its replication factor on brokers that may hold it, spread, on dirs that may hold it (no replica of
    a new broker without a dir); every dir within its room; with ``limit``, every broker that keeps
    data at or under its limit."""
    a, e = ctx.assignment, ctx.eligibility
    places: set[DirKey] = set()
    for key in keys:
        replicas, dirs = a.replicas[key], a.dirs[key]
        p = ctx.snapshot.partition(*key)
        if p is None or repair_reasons(
            e, replicas, dirs, p.size_bytes, replication_factor(ctx, key), ctx.tree_for(key), p.leader, p.isr
        ):
            return False
        if e.pins(p.replicas, replicas):
            return False  # Kafka refuses a target naming a broker whose every dir is cordoned
        where = dict(zip(p.replicas, p.log_dirs, strict=True))
        for b, d in zip(replicas, dirs, strict=True):
            if b in where and d == where[b]:
                continue
            if d is None or not e.dir_may_receive(b, d) or (b, d) in e.offline:
                return False
            if b not in where and not e.may_receive(b):
                return False
            places.add((b, d))
    if any((a.room(*place) or 0) < 0 for place in places):
        return False
    return limit is None or all(a.broker_bytes[b] <= limit[b] for b in e.active_brokers)


def copied(ctx: PlanningContext, keys: Iterable[Key]) -> int:
    """The bytes the working assignment copies for ``keys``, as the summary counts them
    (``plan_quality.count_move``)."""
    a, out = ctx.assignment, dict.fromkeys(plan_quality.MOVEMENT, 0)
    for key in keys:
        p = ctx.snapshot.partition(*key)
        if p is not None:
            after = replace(p, replicas=tuple(a.replicas[key]), log_dirs=tuple(a.dirs[key]))
            plan_quality.count_move(out, p, after)
    return out["bytesToMove"]


def _dirs_for(
    ctx: PlanningContext, p: PartitionState, broker: int, where: dict[int, str | None]
) -> list[str]:
    """The dirs of ``broker`` that may hold a replica of ``p`` (empty: the broker may not)."""
    e = ctx.eligibility
    if broker in where:
        home = where[broker]
        if broker in e.decommissioned or not e.broker_may_keep(broker) or broker in e.pinned:
            return []  # (pinned: a partition the program places changes, and must leave that broker)
        if home is not None and (broker, home) in e.offline:
            return []  # on a failed dir: it leaves the broker
        stays = [home] if home is not None and e.may_keep(broker, home, p.size_bytes) else []
        others = [d for d in e.dirs[broker] if d != home and e.dir_may_receive(broker, d)]
        others = [d for d in others if (broker, d) not in e.offline]
        return stays + others if home is not None else list(e.dirs[broker])
    if not e.may_receive(broker):
        return []
    return [d for d in e.dirs[broker] if e.dir_may_receive(broker, d) and (broker, d) not in e.offline]


def _spread(m: Program, tree: RackTree, xs: dict[int, int], rf: int, compact: bool = False) -> None:
    """KIP-879 maximal spread of one partition's replicas over ``tree`` (``RackTree.violation``'s rule).
    ``compact`` (the joint program's): a variable saying whether a child is full only where that can
    matter (module docstring)."""
    units: dict[tuple[str, ...], list[int]] = {}
    for b in xs:
        path = tree.path[b]
        for depth in range(len(path) + 1):
            units.setdefault(path[:depth], []).append(b)
    members: dict[tuple[str, ...], int] = {}
    for b in tree.members:
        path = tree.path[b]
        for depth in range(len(path) + 1):
            members[path[:depth]] = members.get(path[:depth], 0) + 1
    for unit in sorted(units):
        if len(unit) >= tree.levels:
            continue
        kids = sorted({tree.path[b][: len(unit) + 1] for b in units[unit]})
        if len(kids) < 2:
            continue
        for c2 in kids:
            mem = [(xs[b], 1.0) for b in units[c2] if b in tree.members]
            n_mem = members.get(c2, 0)
            if n_mem == 0:
                continue
            if compact and 2 * n_mem + 2 > rf:  # c2 full beside a sibling two above it would take
                for c1 in kids:  # 2 n_mem + 2 replicas, more than the partition has: the rule holds
                    if c1 != c2:  # for c2 full or not
                        pair = [(xs[b], 1.0) for b in units[c1]] + [(xs[b], -1.0) for b in units[c2]]
                        m.row(pair, float("-inf"), 1.0)
                continue
            still = m.var()  # 1: a member under c2 holds no replica (c2 is not full)
            m.row([*mem, (still, 1.0)], float("-inf"), float(n_mem))
            m.row([*mem, (still, float(n_mem))], float(n_mem), float("inf"))
            for c1 in kids:
                if c1 != c2:
                    pair = [(xs[b], 1.0) for b in units[c1]] + [(xs[b], -1.0) for b in units[c2]]
                    m.row([*pair, (still, float(rf))], float("-inf"), float(1 + rf))


def _room(m: Program, below: int) -> bool:
    """Whether the program's linear relaxation leaves at least ``ROOM_FLOOR`` of ``below`` (the bar a
    plan must go under) to win: none where the relaxation has no solution under the bar."""
    bound = relaxed(m)
    return bound is not None and below - bound >= ROOM_FLOOR * below


def run_program(
    m: Program,
    gap: float | None = None,
    root_only: bool = False,
    nodes: int = MAX_NODES,
    solutions: int | None = None,
) -> Answer:
    """HiGHS on the program: the values of its best solution within ``MAX_NODES`` nodes and
    ``NODE_WORK`` nodes x binaries (a node's linear program grows with the binaries), if any; with
    ``gap``, HiGHS stops as soon as its best is proven within that share of the optimum (the
    ``Balanced`` effort, model/effort.py: on a cluster of a few brokers most of the search otherwise
    goes to proving that no plan a fraction of a percent cheaper exists). Each
    row and the objective are scaled by their largest coefficient (bytes in the tens of billions
    otherwise leave HiGHS's tolerances meaningless); ``check`` judges the solution in exact integers.
    ``root_only``: presolve and the root node alone, without heuristics; only whether HiGHS proved that
    no solution exists is answered. ``nodes``: fewer nodes than ``MAX_NODES``; ``solutions``: stop at
    that many improving solutions (the joint program's bounds). ``m.cutoff`` (a cheaper plan asked for:
    the bar's row too) is given to HiGHS as its ``objective_bound``: a node or a sub-MIP that cannot go
    below it is pruned and a binary whose reduced cost would take the root above it is fixed, which the
    row alone does not give it (measured: docs/benchmarks.md, "The bar as HiGHS's cutoff")."""
    import warnings

    import numpy as np  # (here: most commands that load this module never plan)
    from scipy.optimize import Bounds, milp

    cost, scale, rows = _scaled(m)
    n = len(m.cost)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (scipy warns of the HiGHS options it does not list itself)
        res = milp(
            cost,
            integrality=np.ones(n),
            bounds=Bounds(0, 1),
            constraints=rows,
            options={
                "node_limit": 1 if root_only else min(nodes, NODE_WORK // n),
                **({"mip_heuristic_effort": 0.0} if root_only else {}),
                "disp": False,
                **({"mip_rel_gap": gap} if gap is not None else {}),
                **({"mip_max_improving_sols": solutions} if solutions is not None else {}),
                **({"objective_bound": m.cutoff / scale} if m.cutoff is not None else {}),
                **HIGHS_OPTIONS,
            },
        )
    if res.x is None or root_only:
        # (scipy's status 2 is also HiGHS's model error: only its infeasible status is a proof)
        return Answer(None, infeasible=str(res.message).startswith("The problem is infeasible"))
    return Answer([float(v) for v in res.x])


def relaxed(m: Program) -> float | None:
    """The optimum of the program's linear relaxation (each binary anywhere in [0, 1]) in the objective's
    units (bytes): a lower bound on every solution of the program, HiGHS's own root bound before its
    cuts; None where the relaxation has no solution (nor then has the program) or HiGHS gives none."""
    import numpy as np
    from scipy.optimize import Bounds, milp

    cost, scale, rows = _scaled(m)
    res = milp(cost, integrality=np.zeros(len(m.cost)), bounds=Bounds(0, 1), constraints=rows)
    return None if res.x is None else float(res.fun) * scale


def _scaled(m: Program) -> tuple[Any, float, Any]:
    """The program for HiGHS: the objective over its scale, each row over its largest coefficient
    (bytes in the tens of billions otherwise leave HiGHS's tolerances meaningless)."""
    import numpy as np
    from scipy.optimize import LinearConstraint
    from scipy.sparse import coo_array, diags_array

    rows, cols, vals = [], [], []
    for i, terms in enumerate(m.rows):
        for j, w in terms:
            rows.append(i)
            cols.append(j)
            vals.append(w)
    matrix = coo_array((vals, (rows, cols)), shape=(len(m.rows), len(m.cost))).tocsr()
    top = np.maximum(abs(matrix).max(axis=1).toarray().ravel(), 1.0)
    cost = np.array(m.cost)
    scale = max(float(cost.max(initial=0.0)), 1.0)
    scaled = LinearConstraint(diags_array(1.0 / top) @ matrix, np.array(m.low) / top, np.array(m.high) / top)
    return cost / scale, scale, scaled
