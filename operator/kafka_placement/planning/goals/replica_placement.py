"""Hard goal: every partition's replicas sit where the intents allow, with the declared RF and spread.

Rules (docs/architecture.md §4): distinct brokers; none on decommissioned brokers; none on drained dirs;
no new replica on a cordoned dir or broker; the policy's replication factor; multi-level rack spread for
topics whose policy asks for it; dir capacity; a partition whose replicas change keeps none on a broker
whose every dir Kafka has cordoned (``Eligibility.pins``: Kafka refuses such a target, so the replica
moves off too, and the optional goals leave such partitions alone). Minimal movement: a partition that
breaks no rule is left alone; a replica on a drained dir moves to another dir of the same broker when
one may take it (a local copy, not a network move), except from a dir that failed (offline: nothing can
be read from it, so the replica is re-created on another broker from an in-sync replica); a removed
preferred leader's slot is taken by a kept replica (a free reorder) rather than by the newcomer.
Partitions are handled largest first so the big replicas get the emptiest brokers. Infeasible partitions
are collected and reported together.

Equally loaded brokers are tried in id order; a shard of the sharded planner passes its shard number as
``salt`` so that shards running in parallel break those ties in different (stable) orders, and do not
all send their largest partitions to the same empty brokers.
"""

from __future__ import annotations

import zlib
from bisect import bisect_left, insort
from collections.abc import Callable, Sequence

from ...model.errors import InfeasibleError
from ...model.intents import Intents
from ...model.snapshot import ClusterSnapshot
from .. import headroom, rack_room, shares, waiting
from ..context import PlanningContext, Verdict
from ..plan_summary import PlanSummary
from ..repack import repack
from ..repairs import repair_reasons, suspects
from ..room import eject_for
from ..state import Assignment, Eligibility, Key
from ..targets import order_replicas, replication_factor, target_dirs
from ..topology import RackTree, Unit

EJECT_LIMIT = 3  # times one partition may be sent back to make room for another
EJECT_ROUNDS = 20  # attempts per partition that found no room, in all
COLD = (False, 0.0)  # ``_dir_heat`` of a broker not holding the partition


class ReplicaPlacementGoal:
    """Decommission, drain, cordon, replication factor, rack spread and capacity."""

    name = "ReplicaPlacement"
    is_hard = True

    def __init__(self, salt: int = 0) -> None:
        self.salt = salt
        self._ties: dict[int, int] = {}
        self._limits: dict[int, float] | None = None
        self._shares: dict[int, float] | None = None  # each broker's even share, with broker balance
        # brokers by (bytes, replicas, tie-break, id), kept sorted as the repairs change loads
        # (``_ordered``): None = to be built; ``_dirty`` = brokers whose loads changed since
        self._order: list[tuple[int, int, int, int]] | None = None
        self._keyed: dict[int, tuple[int, int, int, int]] = {}
        self._dirty: set[int] = set()
        # each broker's (bytes, replicas, tie-break, id) as it is now, kept by ``_apply`` (None: to be built)
        self._loads: dict[int, tuple[int, int, int, int]] | None = None
        self._evenness: dict[int, bool] = {}  # ``_uneven`` per broker, dropped as the repairs change it
        self._dir_slack = 1.0  # 1 + the dir balance tolerance
        self._undrained: dict[int, list[str]] = {}  # each broker's dirs not drained
        self._keeping: dict[int, list[str]] = {}  # each broker's dirs that keep data (``keeping_dirs``)
        self._no_placement = False  # the exact program proved that no placement fits (``_none_fits``)

    def verdict(self, intents: Intents, summary: PlanSummary) -> Verdict:
        """Met when the plan leaves no hard-rule violation (the summary's ``hardViolationsAfter``)."""
        left = summary.hard_violations_after
        return Verdict(left == 0, left, 0)

    def optimize(self, ctx: PlanningContext) -> None:
        a = ctx.assignment
        self._limits = balance_limits(ctx)
        even = 1 + (ctx.tolerance("brokers") or 0.0)  # (a limit is the broker's even share x this)
        self._shares = {b: v / even for b, v in self._limits.items()} if self._limits is not None else None
        salt = self.salt
        self._ties = {b: zlib.crc32(f"{salt}:{b}".encode()) if salt else 0 for b in ctx.eligibility.dirs}
        self._order, self._evenness, self._loads = None, {}, None
        self._dir_slack = 1 + (ctx.tolerance("log_dirs") or 0.0)
        self._undrained, self._keeping = {}, {}  # (each broker's dirs: these rules hold for the whole plan)
        self._no_placement = False
        problems: list[InfeasibleError] = []
        full: list[Key] = []
        known = ctx.repairs  # (need no asking: none of them has changed since the snapshot)
        ask = self._suspects(ctx) if known is None else set(a.touched)
        keys = ask if known is None else known | ask
        for key in sorted(keys, key=lambda k: (-a.size[k], k)):
            try:
                self._repair(ctx, key, key in ask)
            except InfeasibleError as e:
                if e.rule == headroom.RULE:
                    full.append(key)
                else:
                    problems.append(e)
        if full:
            problems += self._place_full(ctx, full)
        if problems:
            first = problems[0]
            more = f" (and {len(problems) - 1} more partitions cannot be placed)" if len(problems) > 1 else ""
            if first.rule == headroom.RULE and ctx.eligibility.volumes:
                raise _refused(ctx, first.detail + more, first.partition)
            raise InfeasibleError(first.detail + more, first.rule, first.partition)

    @staticmethod
    def _suspects(ctx: PlanningContext) -> set[Key]:
        """The partitions ``_repair`` may change (``repairs.suspects``, and any a goal set before: their
        replica count may differ from the snapshot's): ``needs_repair`` is asked of these only, the others
        it would leave alone (a million partitions: 15 s of the plan's 117 went to asking all of them).
        Not asked where the partitions needing repair are known already (``ctx.repairs``: ``optimize``
        takes them, with those a goal set before, and asks only the latter)."""
        a = ctx.assignment
        trees = ctx.trees

        def rule(topic: str) -> tuple[int | None, RackTree | None]:
            policy = a.topic_policy.get(topic)
            if policy is None:
                return None, None
            return policy.replication_factor or None, trees.get(policy.name)

        found = set(suspects(ctx.eligibility, a.replicas, rule))
        found.update(a.touched)
        return found

    def _exact(self, ctx: PlanningContext) -> bool:
        """No room found on full dirs by the greedy repair: on a small cluster the exact program
        (``planning/exact.py``) places every partition the repair changes, moving kept replicas of them as
        far as it needs, copying the fewest bytes (under ``Balanced``, within 0.5% of the fewest)."""
        from .. import exact  # (it builds on this goal's rules)

        if self._no_placement or not exact.applicable(ctx):
            return False
        found = exact.solve(ctx, exact.movable(ctx, balance=False), None, dirs=True).found
        return found is not None and exact.apply(ctx, found, None)

    def _none_fits(self, ctx: PlanningContext) -> bool:
        """Whether the exact program proves at its root (milliseconds where the volumes are short of room
        in all: ``exact.solve(root_only=True)``) that no placement keeps the rules (small clusters only)."""
        from .. import exact

        if not exact.applicable(ctx):
            return False
        parts = exact.movable(ctx, balance=False)
        self._no_placement = exact.solve(ctx, parts, None, dirs=True, root_only=True).infeasible
        return self._no_placement

    def _errors(self, ctx: PlanningContext, full: list[Key]) -> list[InfeasibleError]:
        """Why each of ``full`` has no room, as its repair says (largest first)."""
        errors = []
        for key in sorted(full, key=lambda k: (-ctx.assignment.size[k], k)):
            try:
                self._repair(ctx, key)
            except InfeasibleError as e:
                errors.append(e)
        return errors

    def accepts(self, ctx: PlanningContext, key: Key, replicas: Sequence[int]) -> bool:
        e = ctx.eligibility
        if len(set(replicas)) != len(replicas) or len(replicas) != replication_factor(ctx, key):
            return False
        original = ctx.snapshot.at(key)
        before = set(original.replicas) if original is not None else set()
        if original is not None and waiting.no_in_sync_replica(
            e.dead, original.replicas, original.leader, original.isr
        ):
            return set(replicas) == before  # no leader to copy from: no goal may add a replica (waiting.py)
        if original is not None and e.pins(original.replicas, replicas):
            return False  # keeps a replica on a broker whose every dir is cordoned: Kafka refuses it
        for b in replicas:
            if b in e.decommissioned or not e.broker_may_keep(b):
                return False
            if b not in before and not e.may_receive(b):
                return False
        tree = ctx.tree_for(key)
        return tree is None or tree.violation(replicas) is None

    # ---- one partition ---------------------------------------------------------------------------

    def _keepable(self, ctx: PlanningContext, key: Key, broker: int, path: str | None) -> bool:
        e, a = ctx.eligibility, ctx.assignment
        if broker in e.decommissioned:
            return False
        if e.may_keep(broker, path, ctx.assignment.size[key]):
            return True
        if _lost(e, broker, path):
            return False  # a failed dir's replica cannot be moved to another dir: it leaves the broker
        return a.best_dir(e, broker, a.size[key], exclude=[path] if path else []) is not None

    def _repair(self, ctx: PlanningContext, key: Key, ask: bool = True) -> None:
        """Repair partition ``key`` if the hard rules would change it (``ask`` False: known to)."""
        if ask and not needs_repair(ctx, key):
            return
        e, a = ctx.eligibility, ctx.assignment
        reps, dirs, size = a.replicas[key], a.dirs[key], a.size[key]
        rf = replication_factor(ctx, key)
        keep = [
            b
            for b, d in zip(reps, dirs, strict=True)
            if self._keepable(ctx, key, b, d) and not self._sheds(ctx, key, b, d)
        ]
        tree = ctx.tree_for(key)
        all_kept = len(keep) == len(reps)
        if all_kept and len(reps) == rf and (tree is None or tree.violation(reps) is None):
            self._apply(ctx, key, list(reps))  # intra-broker moves off drained dirs only
            return
        if e.pinned:  # the replicas change: Kafka refuses a target naming a wholly cordoned broker
            keep = [b for b in keep if b not in e.pinned]
        policy = a.policy(key)
        preferred = set(policy.preferred_brokers) if policy is not None else set()

        lost = {b for b, d in zip(reps, dirs, strict=True) if _lost(e, b, d) and not e.may_keep(b, d, size)}

        def usable(b: int) -> bool:
            return b not in lost and e.may_receive(b) and a.has_room(e, b, size)

        target: list[int] | None
        if tree is not None:
            # Among replicas that may stay, keep first those that need no dir move (no copy at all).
            relocating = {b for b, d in zip(reps, dirs, strict=True) if not e.may_keep(b, d, size)}
            load = a.broker_bytes if self._limits is not None else None
            heat = self._dir_heat(ctx, key)
            pulls = self._dir_pulls(ctx, size) if heat is not None else None
            ranks = self._ranks(ctx, preferred, relocating, heat, pulls)
            order = None if preferred else self._sorter(ctx, relocating, heat, pulls)
            target = tree.allocate(rf, keep, usable, ranks, load, order)
        elif len(keep) >= rf:
            target = self._trim(ctx, key, keep, rf)
        else:
            target = self._extend(ctx, key, keep, rf, usable, preferred)
        if target is None:
            raise self._infeasible(ctx, key, rf, keep, usable)
        self._apply(ctx, key, order_replicas(reps, target))

    def _sheds(self, ctx: PlanningContext, key: Key, broker: int, path: str | None) -> bool:
        """A replica that must leave its dir anyway (drained) leaves its broker instead when that broker
        is above the broker-balance threshold: the same bytes move, and they also shed its excess,
        which the balance goal would otherwise pay for with another move."""
        limits, a = self._limits, ctx.assignment
        if limits is None or path is None or ctx.eligibility.may_keep(broker, path, a.size[key]):
            return False
        policy = ctx.assignment.policy(key)
        if policy is None or not policy.balance.brokers or not policy.enforced:
            return False
        return broker in limits and ctx.assignment.broker_bytes[broker] > limits[broker]

    def _place_full(self, ctx: PlanningContext, full: list[Key]) -> list[InfeasibleError]:
        """Partitions no dir had room for. On a small cluster the exact program is asked first, at its
        root, whether any placement exists at all: where it proves none, the searches (which would run to
        their work limits, seconds on a hundred partitions) are skipped and the request is refused at
        once; else it is asked for the cheapest packing (``_exact``: a second or less on a hundred
        partitions, where the searches below ran to their limits, 2-15 s, and could copy 65% more
        bytes). Where it is not run or finds none within its bounds: a bounded repacking search
        (``repack``: it may move replicas of partitions this goal changes anyway out of the way), else the
        ejection search. Before all of them, on any cluster: whether the brokers of each rack unit (and the
        cluster) may hold at all what every plan must put there (``rack_room``, milliseconds): a unit
        that cannot is the refusal, at once."""
        short = rack_room.shortfall(ctx)
        if short is not None:
            self._no_placement = True
            return [InfeasibleError(short.detail, headroom.RULE, f"{short.largest[0]}-{short.largest[1]}")]
        if self._none_fits(ctx):
            return self._errors(ctx, full)
        if self._exact(ctx):
            self._order, self._evenness, self._loads = None, {}, None  # (it placed replicas itself)
            return []
        changed = {k for k in ctx.assignment.replicas if _changed(ctx, k) or needs_repair(ctx, k)}
        packed = repack(
            ctx,
            full,
            lambda k: replication_factor(ctx, k),
            lambda k, r: self.accepts(ctx, k, r),
            order_replicas,
            changed.__contains__,
        )
        self._order, self._evenness, self._loads = None, {}, None  # (the search moved replicas itself)
        if packed:
            return []
        return self._pack(ctx, full)

    def _pack(self, ctx: PlanningContext, full: list[Key]) -> list[InfeasibleError]:
        """Place the partitions no dir had room for by ejecting newcomers (``room.eject_for``), a
        bounded search: each partition is ejected at most EJECT_LIMIT times, EJECT_ROUNDS x their
        number of attempts in all. What is still unplaced is infeasible."""
        a = ctx.assignment
        queue = sorted(full, key=lambda k: (-a.size[k], k))
        tabu: dict[Key, int] = {}
        errors: dict[Key, InfeasibleError] = {}
        changed = {k for k in a.replicas if _changed(ctx, k)}
        for _ in range(EJECT_ROUNDS * len(full) + len(full)):
            if not queue:
                break
            key = queue.pop(0)
            try:
                self._repair(ctx, key)
                errors.pop(key, None)
                continue
            except InfeasibleError as e:
                errors[key] = e
                if e.rule != headroom.RULE:
                    continue
            ejected = eject_for(ctx, key, tabu, EJECT_LIMIT, lambda k: needs_repair(ctx, k) or k in changed)
            self._order, self._evenness, self._loads = None, {}, None  # (the ejection moved replicas)
            if not ejected:
                continue
            try:
                self._repair(ctx, key)
                errors.pop(key, None)
            except InfeasibleError as e:
                errors[key] = e
                queue.append(key)
            queue = sorted(set(queue) | set(ejected), key=lambda k: (-a.size[k], k))
        for key in queue:  # the search ran out of attempts
            try:
                self._repair(ctx, key)
                errors.pop(key, None)
            except InfeasibleError as e:
                errors[key] = e
        return [errors[k] for k in sorted(errors, key=lambda k: (-a.size[k], k))]

    def _ranks(
        self,
        ctx: PlanningContext,
        preferred: set[int],
        relocating: set[int],
        heat: dict[int, tuple[bool, float]] | None,
        pulls: Callable[[Sequence[int]], list[bool]] | None,
    ) -> Callable[[Sequence[int]], list[tuple[object, ...]]]:
        """The rack repair's order of brokers, the keys of many at once (``RackTree.allocate``'s ``ranks``:
        a unit's members are re-sorted every few repairs, most of the keys computed at a million
        partitions): a broker holding a replica that must change dir last among the partition's, then the
        preferred brokers, then the least loaded (bytes, replicas), a salted tie-break (none without a
        salt) and the id; with dir balance asked (``heat``), after "preferred" the replicas to drop first
        (``_dir_heat``) and the brokers whose dirs a new replica evens out (``_dir_pulls``)."""
        a = ctx.assignment
        bb, br, ties = a.broker_bytes, a.broker_replicas, self._ties
        if heat is None or pulls is None:
            return lambda bs: [(b in relocating, b not in preferred, bb[b], br[b], ties[b], b) for b in bs]
        return lambda bs: [
            (b in relocating, b not in preferred, *heat.get(b, COLD), not pull, bb[b], br[b], ties[b], b)
            for b, pull in zip(bs, pulls(bs), strict=True)
        ]

    def _sorter(
        self,
        ctx: PlanningContext,
        relocating: set[int],
        heat: dict[int, tuple[bool, float]] | None,
        pulls: Callable[[Sequence[int]], list[bool]] | None,
    ) -> Callable[[Sequence[int]], list[int]]:
        """Many brokers in ``_ranks``' order when no broker is preferred (``RackTree.allocate``'s
        ``order``: a unit's members, re-sorted every few repairs): sorted by their loads' keys as they
        stand (``_loads``, no key built), then split stably by the keys' leading items, which are the
        same for every broker not holding the partition: by ``_dir_pulls`` where dir balance is asked; a
        broker holding it is put where its whole key sorts."""
        if self._loads is None:
            a = ctx.assignment
            bb, br, ties = a.broker_bytes, a.broker_replicas, self._ties
            self._loads = {b: (bb[b], br[b], ties[b], b) for b in ties}
        loads = self._loads
        held = relocating.union(heat) if heat is not None else relocating

        def whole(b: int) -> tuple[object, ...]:
            if heat is None or pulls is None:
                return (b in relocating, *loads[b])
            return (b in relocating, *heat.get(b, COLD), not pulls((b,))[0], *loads[b])

        def order(bs: Sequence[int]) -> list[int]:
            by_load = sorted(bs, key=loads.__getitem__)
            odd = [b for b in by_load if b in held] if held else []
            if odd:
                by_load = [b for b in by_load if b not in held]
            if heat is None or pulls is None:
                out = by_load
            else:
                pulled = pulls(by_load)
                out = [b for b, pull in zip(by_load, pulled, strict=True) if pull]
                out += [b for b, pull in zip(by_load, pulled, strict=True) if not pull]
            for b in odd:
                insort(out, b, key=whole)
            return out

        return order

    def _dir_heat(self, ctx: PlanningContext, key: Key) -> dict[int, tuple[bool, float]] | None:
        """Which of a partition's current replicas a rack repair should drop, when its topic's policy asks
        for dir balance (None otherwise), per broker holding it: first one on a broker above its
        broker-balance limit, then the one whose dir holds the most above its share of the broker's
        balanced load (relative to that load). The repair must drop some replica anyway; dropped from the
        fuller dir, the bytes that leave also even out the broker's dirs, where the broker's load alone
        picks either dir and dir balance then pays local copies for it (issue 56: 98% of the bytes above
        the lower bound at 1M partitions on 1,000 brokers). A broker not holding it ranks ``COLD``: new
        replicas rank as before."""
        if key[0] not in ctx.balanced_topics("log_dirs"):
            return None
        a, e = ctx.assignment, ctx.eligibility
        limits = self._limits or {}
        slack, undrained = self._dir_slack, self._undrained
        out: dict[int, tuple[bool, float]] = {}
        for b, d in zip(a.replicas[key], a.dirs[key], strict=True):
            over = b in limits and a.broker_bytes[b] > limits[b]
            paths = undrained.get(b)
            if paths is None:
                paths = undrained[b] = [p for p in e.dirs.get(b, ()) if (b, p) not in e.drained]
            if d is None or len(paths) < 2 or d not in paths:
                out[b] = (over, 0.0)
                continue
            held = sum(a.dir_bytes[(b, p)] for p in paths)
            final = min(held, limits.get(b, held))  # the broker's load once balanced
            out[b] = (over, (a.dir_bytes[(b, d)] - slack * final / len(paths)) / max(1, final))
        return out

    def _dir_pulls(self, ctx: PlanningContext, size: int) -> Callable[[Sequence[int]], list[bool]]:
        """For each of many brokers (a unit's members at once: ``_ranks``), whether a new replica of
        ``size`` bytes evens out the broker's dirs (for a topic whose policy asks for dir balance): one of
        its dirs holds more than its threshold, so a replica landing on its emptiest dir (``best_dir``)
        raises the mean the threshold follows and fills the emptier dir, work dir balance would otherwise
        do with local copies; where broker balance is asked, only on a broker it leaves within its even
        share (brokers above it are where the balance goal's work is). Such brokers are offered first to
        the repair's new replicas (a copy the repair makes anyway), among those the spread leaves equal:
        on the 8 of 20 random small instances with dir balance and no broker balance
        (tests/bench/run_generalise.py, family ``dir-balance``) the plans went from up to 1.144x the
        solver's best to at most 1.065x, 5 of them at it."""
        a, e = ctx.assignment, ctx.eligibility
        slack, keeping = self._dir_slack, self._keeping
        uneven, shares_, held = self._evenness, self._shares, a.broker_bytes

        def pulls(brokers: Sequence[int]) -> list[bool]:
            out = []
            for b in brokers:
                if shares_ is not None and held[b] + size > shares_.get(b, -1.0):
                    out.append(False)
                    continue
                found = uneven.get(b)
                if found is None:
                    paths = keeping.get(b)
                    if paths is None:
                        paths = keeping[b] = e.keeping_dirs(b)
                    found = uneven[b] = _uneven(a, e, b, slack, paths)
                out.append(found)
            return out

        return pulls

    def _trim(self, ctx: PlanningContext, key: Key, keep: list[int], rf: int) -> list[int]:
        """Lower the RF (or drop extras): keep the leader, drop replicas on the most loaded brokers."""
        a = ctx.assignment
        leader, rest = keep[0], keep[1:]
        rest.sort(key=lambda b: (a.broker_bytes[b], a.broker_replicas[b], b))
        return [leader, *rest[: rf - 1]]

    def _extend(
        self,
        ctx: PlanningContext,
        key: Key,
        keep: list[int],
        rf: int,
        usable: Callable[[int], bool],
        preferred: set[int],
    ) -> list[int] | None:
        """Add brokers: preferred first, then racks the partition does not use yet, then least loaded.

        Brokers are asked ``usable`` (a dir with room: the costliest question) in that order and only
        until one answers yes: the same choice as the best of all usable brokers, as the order's key
        ends with the broker id and so never ties (where the disk headroom rule binds, the best often has
        no room: ``drain`` asks 2.5 brokers a slot). Without preferred brokers the order is the kept load
        order (``_ordered``), walked twice: brokers under a unit the partition does not use yet, then
        the others."""
        path = ctx.soft_tree.path
        chosen = list(keep)
        answers: dict[int, bool] = {}

        def asked(b: int) -> bool:
            if b not in answers:
                answers[b] = usable(b)
            return answers[b]

        while len(chosen) < rf:
            used = {path[b] for b in chosen}
            if preferred:
                best = self._best_preferred(ctx, chosen, used, preferred, asked)
            else:  # the common case: the kept load order, brokers under a unit not used yet first
                taken = set(chosen)
                order = self._ordered(ctx)
                best = next(
                    (
                        k[-1]
                        for under_used in (False, True)
                        for k in order
                        if k[-1] not in taken and (path[k[-1]] in used) == under_used and asked(k[-1])
                    ),
                    None,
                )
            if best is None:
                return None
            chosen.append(best)
        return chosen

    def _best_preferred(
        self,
        ctx: PlanningContext,
        chosen: list[int],
        used: set[Unit],
        preferred: set[int],
        asked: Callable[[int], bool],
    ) -> int | None:
        """``_extend``'s choice of one broker when the policy prefers some (rare: every broker ranked):
        preferred first, then under a unit the partition does not use yet, then ``_ranks``' order."""
        path, taken = ctx.soft_tree.path, set(chosen)
        brokers = [b for b in ctx.eligibility.dirs if b not in taken]
        ranks = self._ranks(ctx, preferred, set(), None, None)(brokers)  # (False, not preferred, load..., id)
        keyed = sorted(((r[1], path[b] in used, *r[2:]), b) for b, r in zip(brokers, ranks, strict=True))
        return next((b for _, b in keyed if asked(b)), None)

    def _ordered(self, ctx: PlanningContext) -> list[tuple[int, int, int, int]]:
        """The brokers that may hold replicas by (bytes, replicas, tie-break, id), as they are now: built
        once, then only the brokers the repairs changed since (``_dirty``) are moved in the sorted list
        (a repair changes two or three brokers' loads; sorting every broker for every replica added was
        the repair's largest cost where many replicas leave their broker). Rebuilt after a search that
        moved replicas itself (repack, ejection)."""
        a = ctx.assignment
        bb, br, ties = a.broker_bytes, a.broker_replicas, self._ties
        if self._order is None:
            self._keyed = {b: (bb[b], br[b], ties[b], b) for b in ctx.eligibility.dirs}
            self._order = sorted(self._keyed.values())
        elif self._dirty:
            order, keyed = self._order, self._keyed
            for b in self._dirty:
                old = keyed.get(b)
                if old is None:
                    continue  # (not a broker that may hold replicas)
                new = (bb[b], br[b], ties[b], b)
                if new != old:
                    del order[bisect_left(order, old)]
                    insort(order, new)
                    keyed[b] = new
        self._dirty.clear()
        return self._order

    def _apply(self, ctx: PlanningContext, key: Key, target: list[int]) -> None:
        a = ctx.assignment
        size = a.size[key]
        where = dict(zip(a.replicas[key], a.dirs[key], strict=True))
        new_dirs = target_dirs(ctx, where, target, size)
        if any(d is None and b not in where for b, d in zip(target, new_dirs, strict=True)):
            raise InfeasibleError(
                f"no log dir with room for {size} bytes under the disk headroom limit on brokers {target}",
                headroom.RULE,
                f"{key[0]}-{key[1]}",
            )
        policy = a.policy(key)
        if policy is not None:
            moved = sum(1 for b in target if b not in where)
            if moved:
                ctx.charge(policy, size * moved)
        self._dirty.update(where)
        self._dirty.update(target)
        for b in (*where, *target):
            self._evenness.pop(b, None)
        a.set_placement(key, target, new_dirs)
        loads = self._loads
        if loads is not None:
            bb, br, ties = a.broker_bytes, a.broker_replicas, self._ties
            for b in (*where, *target):
                if b in loads:
                    loads[b] = (bb[b], br[b], ties[b], b)

    def _infeasible(
        self, ctx: PlanningContext, key: Key, rf: int, keep: list[int], usable: Callable[[int], bool]
    ) -> InfeasibleError:
        """Why partition ``key`` has no placement (``usable``: the repair's test of a broker for a new
        replica of it)."""
        e = ctx.eligibility
        name = f"{key[0]}-{key[1]}"
        holders = {b for b in e.dirs if e.may_receive(b)} | set(keep)
        if len(holders) < rf:
            why = []
            if e.decommissioned:
                why.append(f"decommissioning broker(s) {sorted(e.decommissioned)}")
            if e.cordoned_brokers:
                why.append(f"cordoned broker(s) {sorted(e.cordoned_brokers)}")
            reason = f" after {' and '.join(why)}" if why else ""
            pinned = sorted(e.pinned.intersection(ctx.assignment.replicas[key]))
            if pinned:
                reason += (
                    f"; its replica on broker(s) {pinned} (every log dir cordoned) cannot stay either: Kafka "
                    "refuses a reassignment naming a broker whose every log dir is cordoned"
                )
            return InfeasibleError(
                f"replication factor {rf} needs {rf} brokers that may hold a replica, "
                f"{len(holders)} remain{reason}",
                "replication-factor",
                name,
            )
        size, tree = ctx.assignment.size[key], ctx.tree_for(key)
        held = set(keep)  # (a unit holding a replica that stays is not short of room for it)
        short = tree.units_without(lambda b: b in held or usable(b)) if tree is not None else []
        if tree is None or not short:
            return InfeasibleError(
                f"replication factor {rf} needs {rf} brokers with a log dir that may take {size} bytes; "
                f"only {len(keep)} current replica(s) may stay and too few brokers have room under the "
                "disk headroom limit",
                headroom.RULE,
                name,
            )
        units = "; ".join(
            f"{'/'.join(u)} (broker{'s' if len(m) > 1 else ''} {', '.join(map(str, m))})"
            for u, m in short[:5]
        ) + (f"; and {len(short) - 5} more" if len(short) > 5 else "")
        spread = "spread" if tree.violation(keep) is None else "not spread"
        levels = f"{tree.levels} level{'s' if tree.levels > 1 else ''}"
        return InfeasibleError(
            f"replication factor {rf} needs {rf} brokers with a log dir that may take {size} bytes, spread "
            f"over the racks as its rackAwareness asks ({levels}); {len(keep)} current replica(s) may stay "
            f"({spread} so), and no broker has room for it under the disk headroom limit in {units}",
            headroom.RULE,
            name,
        )


def needs_repair(ctx: PlanningContext, key: Key) -> bool:
    """Whether the hard goal changes partition ``key`` at all (``repair_reasons``). These depend only on
    the partition and the intents, never on other partitions, so the sharded planner sends only these
    partitions to its shards (the Spark engine's tasks select them with ``repair_reasons`` too)."""
    a = ctx.assignment
    reps = a.replicas[key]
    p = ctx.snapshot.at(key)
    return bool(
        repair_reasons(
            ctx.eligibility,
            reps,
            a.dirs[key],
            a.size[key],
            replication_factor(ctx, key),
            ctx.tree_for(key),
            p.leader if p is not None else None,
            p.isr if p is not None else None,
        )
    )


def unmet(snapshot: ClusterSnapshot, intents: Intents) -> list[str]:
    """The partitions whose hard rules ``intents`` break in ``snapshot`` (those the hard goal would change:
    ``needs_repair``), by name, in the snapshot's order: an executed plan's intents hold when none is left.
    One pass, no planning."""
    ctx = PlanningContext.of(snapshot, intents)
    return [p.name for p in snapshot.partitions if needs_repair(ctx, p.key)]


def balance_limits(ctx: PlanningContext) -> dict[int, float] | None:
    """The most bytes each broker that keeps data may hold, when broker balance is asked (the balance
    goal's limits, planning/shares.py; loads counted as they stand, which after the hard goal are final)."""
    tol = ctx.tolerance("brokers")
    e = ctx.eligibility
    active = e.active_brokers
    if tol is None or not active:
        return None
    total = sum(ctx.assignment.broker_bytes.values())
    return shares.limits(e.capacity, active, total, tol) if total else None


def _changed(ctx: PlanningContext, key: Key) -> bool:
    p = ctx.snapshot.at(key)
    a = ctx.assignment
    return p is not None and (tuple(a.replicas[key]) != p.replicas or tuple(a.dirs[key]) != p.log_dirs)


def _uneven(a: Assignment, e: Eligibility, broker: int, slack: float, paths: Sequence[str]) -> bool:
    """Whether one of ``broker``'s dirs that keep data holds more than ``slack`` x its share of the
    broker's bytes (its share of its volume's size where the broker's volumes differ); ``paths``: its dirs
    that keep data (``Eligibility.keeping_dirs``)."""
    if len(paths) < 2:
        return False
    sizes = e.sizes.get(broker)
    held = sum(a.dir_bytes[(broker, p)] for p in paths)
    if sizes is None:
        return max(a.dir_bytes[(broker, p)] for p in paths) > slack * held / len(paths)
    per_byte = held / sum(sizes[p] for p in paths)
    return any(a.dir_bytes[(broker, p)] > slack * per_byte * sizes[p] for p in paths)


def _lost(e: Eligibility, broker: int, path: str | None) -> bool:
    """The replica sits on a dir Kafka reports offline (a failed disk): its data cannot be read there."""
    return path is not None and (broker, path) in e.offline


def _refused(ctx: PlanningContext, detail: str, partition: str) -> InfeasibleError:
    """No placement keeps every dir within its headroom: the refusal naming the fullest dir (the largest
    share of its volume with the replicas placed so far), that share and the limit."""
    e, a = ctx.eligibility, ctx.assignment
    shares = [(headroom.planned_share(s, a.free[v], e.share), v) for v, s in e.volumes.items()]
    planned, where = max(shares, key=lambda x: x[0])
    return headroom.refused(e.share, where, planned, detail, partition, so_far=True)
