"""Multi-level rack hierarchy (KIP-879): unit paths, the maximal-spread rule, and spread allocation.

A rack ``/dc1/r2`` with ``levels: 2`` puts its broker in unit ``(dc1,)`` at level 1 and ``(dc1, r2)`` at
level 2. A partition is **maximally spread** when, at every unit holding replicas (the root first),
its replicas are spread over the child units as evenly as their capacity allows: no child holds two
or more replicas more than a sibling that could still take one. ``allocate`` builds such a spread
level by level (water-filling) and, among the even spreads, keeps as many current replicas as it can,
so repairing a partition moves the fewest replicas. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import repeat

from ..model.intents import RackAwareness

Unit = tuple[str, ...]
Ranks = Callable[[Sequence[int]], list[tuple[object, ...]]]  # the rank of each broker given (lower first)
REFRESH = 16  # allocations between re-sorts of the candidate order
WINDOW = 4  # extra candidates re-ranked live at each allocation
SPAN = 8  # a unit of n brokers is re-sorted every max(REFRESH, n // SPAN) allocations
VERDICTS = 1 << 16  # remembered spread verdicts (cleared when full: one per rack combination in practice)
FLAT = RackAwareness(separator="", levels=1)


@dataclass(slots=True)
class RackTree:
    """Unit paths of brokers for one rack rule, with the children of each unit among ``members``."""

    rule: RackAwareness
    path: dict[int, Unit]
    members: frozenset[int]
    children: dict[Unit, tuple[Unit, ...]] = field(default_factory=dict)
    capacity: dict[Unit, int] = field(default_factory=dict)
    under: dict[Unit, tuple[int, ...]] = field(default_factory=dict)
    # Candidate order per unit, by rank, with the allocation epoch it was sorted in; refreshed every
    # REFRESH allocations (larger units less often: n // SPAN, so sorting costs O(1) per allocation);
    # each allocation re-ranks only the first few live (WINDOW).
    _order: dict[Unit, tuple[int, list[int]]] = field(default_factory=dict)
    _calls: int = 0
    _means: dict[Unit, tuple[int, float]] = field(default_factory=dict)
    _members_under: dict[Unit, list[int]] = field(default_factory=dict)
    _load: Mapping[int, int] | None = None
    _by_rank: Callable[[Sequence[int]], list[int]] | None = None
    # violation() depends only on the multiset of places (unit path, member?) of the brokers: few
    # combinations; a broker's place is read as a small integer (``_codes``, made by ``of``)
    _verdicts: dict[tuple[int, ...], str | None] = field(default_factory=dict)
    _codes: dict[int, int] = field(default_factory=dict)

    @staticmethod
    def of(racks: dict[int, str | None], rule: RackAwareness, members: Iterable[int]) -> RackTree:
        tree = RackTree(rule, {b: rule.path(r) for b, r in racks.items()}, frozenset(members))
        kids: dict[Unit, set[Unit]] = {}
        for b in tree.members:
            p = tree.path[b]
            for depth in range(len(p) + 1):
                tree.capacity[p[:depth]] = tree.capacity.get(p[:depth], 0) + 1
                if depth < len(p):
                    kids.setdefault(p[:depth], set()).add(p[: depth + 1])
        tree.children = {u: tuple(sorted(c)) for u, c in kids.items()}
        under: dict[Unit, list[int]] = {}
        for b in sorted(tree.path):
            p = tree.path[b]
            for depth in range(len(p) + 1):
                under.setdefault(p[:depth], []).append(b)
        tree.under = {u: tuple(bs) for u, bs in under.items()}
        places: dict[tuple[Unit, bool], int] = {}
        tree._codes = {b: places.setdefault(tree.place(b), len(places)) for b in sorted(tree.path)}
        return tree

    @property
    def levels(self) -> int:
        return self.rule.levels

    def _caps(self, extra: Collection[int]) -> tuple[dict[Unit, int], dict[Unit, tuple[Unit, ...]]]:
        """Capacity and children when brokers outside ``members`` (e.g. cordoned holders) also count."""
        outside = [b for b in extra if b not in self.members and b in self.path]
        if not outside:
            return self.capacity, self.children
        caps = dict(self.capacity)
        kids = {u: set(c) for u, c in self.children.items()}
        for b in outside:
            p = self.path[b]
            for depth in range(len(p) + 1):
                caps[p[:depth]] = caps.get(p[:depth], 0) + 1
                if depth < len(p):
                    kids.setdefault(p[:depth], set()).add(p[: depth + 1])
        return caps, {u: tuple(sorted(c)) for u, c in kids.items()}

    def counts(self, brokers: Iterable[int]) -> dict[Unit, int]:
        out: dict[Unit, int] = {}
        for b in brokers:
            p = self.path[b]
            for depth in range(len(p) + 1):
                out[p[:depth]] = out.get(p[:depth], 0) + 1
        return out

    def place(self, broker: int) -> tuple[Unit, bool]:
        """What ``violation`` sees of a broker: its unit path and whether it is a member."""
        return self.path[broker], broker in self.members

    def violation(self, brokers: Sequence[int]) -> str | None:
        """Why ``brokers`` is not maximally spread (None when it is); it depends only on their places.
        A broker the tree does not know raises KeyError."""
        codes = self._codes
        key = tuple(sorted([codes[b] for b in brokers]))
        try:
            return self._verdicts[key]
        except KeyError:
            pass
        if len(self._verdicts) >= VERDICTS:
            self._verdicts.clear()
        found = self._violation(brokers)
        self._verdicts[key] = found
        return found

    def _violation(self, brokers: Sequence[int]) -> str | None:
        caps, kids = self._caps(brokers)
        counts = self.counts(brokers)
        for unit, n in sorted(counts.items(), key=lambda kv: (len(kv[0]), kv[0])):
            if len(unit) >= self.levels or n < 2:
                continue
            children = kids.get(unit, ())
            most = max(children, key=lambda c: counts.get(c, 0))
            open_children = [c for c in children if counts.get(c, 0) < caps.get(c, 0)]
            if not open_children:
                continue
            least = min(open_children, key=lambda c: counts.get(c, 0))
            if counts.get(most, 0) - counts.get(least, 0) >= 2:
                where = "/".join(unit) or "the cluster"
                return (
                    f"{counts.get(most, 0)} replicas in unit {'/'.join(most)} but {counts.get(least, 0)} in "
                    f"{'/'.join(least)} (level {len(unit) + 1} of {where}), which could take one"
                )
        return None

    def allocate(
        self,
        rf: int,
        keep: Collection[int],
        usable: Callable[[int], bool],
        ranks: Ranks,
        load: Mapping[int, int] | None = None,
        order: Callable[[Sequence[int]], list[int]] | None = None,
    ) -> list[int] | None:
        """A maximally spread set of ``rf`` brokers keeping as many of ``keep`` as possible.

        ``usable(b)`` says whether a broker not in ``keep`` can take a new replica (capacity, dirs);
        ``ranks(bs)`` gives the rank of each broker of ``bs`` (lower first), computed for many at once (a
        unit's members are re-sorted every few allocations: at a million partitions most of the ranks).
        Among units the spread serves equally, a slot that keeps a replica goes to the unit whose next
        kept replica ranks best (so a replica that must relocate anyway is the one dropped), and a slot
        for a new replica to the unit with the best member, or, with ``load`` (bytes per broker, when
        broker balance is asked), to the unit whose members hold the fewest bytes on average. ``order(bs)``,
        when given, is ``by_rank(bs, ranks)`` computed faster. Returns None when too few brokers exist.
        """
        caps, kids = self._caps(keep)
        if caps.get((), 0) < rf:
            return None
        self._calls += 1
        current = self.counts(keep)
        chosen: list[int] = []
        memo: dict[Unit, tuple[object, ...]] = {}
        self._load, self._by_rank = load, order
        if not self._fill((), rf, caps, kids, current, keep, usable, ranks, chosen, memo):
            return None
        return chosen

    def _fill(
        self,
        unit: Unit,
        k: int,
        caps: dict[Unit, int],
        kids: dict[Unit, tuple[Unit, ...]],
        current: dict[Unit, int],
        keep: Collection[int],
        usable: Callable[[int], bool],
        ranks: Ranks,
        chosen: list[int],
        memo: dict[Unit, tuple[object, ...]],
    ) -> bool:
        if k == 0:
            return True
        if len(unit) >= self.levels:
            depth, path = len(unit), self.path
            pick = by_rank([b for b in keep if path[b][:depth] == unit], ranks)[:k]
            if len(pick) < k:
                need = k - len(pick)
                window: list[int] = []
                for b in self._ordered(unit, ranks):
                    if b not in keep and usable(b):
                        window.append(b)
                        if len(window) >= need + WINDOW:
                            break
                if need == 1 and window:  # (by_rank's first: the first of the lowest rank)
                    keys = ranks(window)
                    pick.append(window[keys.index(min(keys))])
                else:
                    pick += by_rank(window, ranks)[:need]
            chosen.extend(pick)
            return len(pick) == k
        children = kids.get(unit, ())
        held = current.get
        n = len(children)
        if n and k % n == 0 and all(caps.get(c, 0) >= k // n for c in children):
            # every even spread gives each child k / n (RF 3 over 3 data centres; one child): the order
            # in which the loop below would serve them changes nothing it returns
            share = k // n
            return all(
                self._fill(c, share, caps, kids, current, keep, usable, ranks, chosen, memo) for c in children
            )
        if k == 1:  # the loop below for one slot: the open child holding the most (ties: below)
            open_ = [c for c in children if caps.get(c, 0) > 0]
            if not open_:
                return False
            most = max(held(c, 0) for c in open_)
            tied = [c for c in open_ if held(c, 0) == most]
            given = dict.fromkeys(tied, 0)
            best = tied[0] if len(tied) == 1 else self._tie_break(tied, given, current, keep, ranks, memo)
            return self._fill(best, 1, caps, kids, current, keep, usable, ranks, chosen, memo)
        given = dict.fromkeys(children, 0)
        for _ in range(k):  # a slot to the open child with the fewest, then the most held (ties: below)
            keyed = [((g, g - held(c, 0)), c) for c in children if (g := given[c]) < caps.get(c, 0)]
            if not keyed:
                return False
            first = min(keyed)[0]
            tied = [c for kk, c in keyed if kk == first]
            best = tied[0] if len(tied) == 1 else self._tie_break(tied, given, current, keep, ranks, memo)
            given[best] += 1
        for c, m in given.items():
            if m and not self._fill(c, m, caps, kids, current, keep, usable, ranks, chosen, memo):
                return False
        return True

    def _tie_break(
        self,
        tied: list[Unit],
        given: dict[Unit, int],
        current: dict[Unit, int],
        keep: Collection[int],
        ranks: Ranks,
        memo: dict[Unit, tuple[object, ...]],
    ) -> Unit:
        """The unit served first among units the spread serves equally (``allocate``): a kept slot before
        a new one, by the rank of the unit's next kept replica; a new slot by the unit's mean load (with
        ``load``), then its best member, then its name. Evaluated lazily, in that order: a unit's best
        member is looked up only among the units of the lowest mean load."""
        kept = [c for c in tied if given[c] < current.get(c, 0)]
        if kept:
            return min(kept, key=lambda c: (self._held_rank(c, given[c], keep, ranks), c))
        if self._load is not None:
            means = [self._mean_load(c, self._load) for c in tied]
            low = min(means)
            tied = [c for c, m in zip(tied, means, strict=True) if m == low]
            if len(tied) == 1:
                return tied[0]
        return min(tied, key=lambda c: (self._unit_rank(c, ranks, memo), c))

    def _held_rank(self, unit: Unit, given: int, keep: Collection[int], ranks: Ranks) -> tuple[object, ...]:
        depth = len(unit)
        return sorted(ranks([b for b in keep if self.path[b][:depth] == unit]))[given]

    def _mean_load(self, unit: Unit, load: Mapping[int, int]) -> float:
        """Mean bytes of the unit's members, as of the last refresh (the epochs of ``_ordered``)."""
        under = self.under.get(unit, ())
        epoch = self._calls // max(1, len(under) // SPAN)
        cached = self._means.get(unit)
        if cached is not None and cached[0] == epoch:
            return cached[1]
        members = self._members(unit)
        mean = sum(map(load.get, members, repeat(0))) / len(members) if members else float("inf")
        self._means[unit] = (epoch, mean)
        return mean

    def units_without(self, ok: Callable[[int], bool]) -> list[tuple[Unit, list[int]]]:
        """The units of the shallowest level that has any in which no member broker is ``ok`` (each
        with its members), by name: where a rule that ``ok`` stands for leaves the spread no broker
        (a refusal names them)."""
        for depth in range(1, self.levels + 1):
            found = [
                (unit, members)
                for unit in sorted(u for u in self.under if len(u) == depth)
                if (members := self._members(unit)) and not any(map(ok, members))
            ]
            if found:
                return found
        return []

    def _members(self, unit: Unit) -> list[int]:
        """The members under ``unit``, by id."""
        members = self._members_under.get(unit)
        if members is None:
            members = self._members_under[unit] = [b for b in self.under.get(unit, ()) if b in self.members]
        return members

    def _unit_rank(
        self, unit: Unit, ranks: Ranks, memo: dict[Unit, tuple[object, ...]]
    ) -> tuple[object, ...]:
        """The best rank of a broker in ``unit``: units with an emptier broker are filled first."""
        if unit not in memo:
            found = ranks(self._ordered(unit, ranks)[:WINDOW])
            memo[unit] = min(found) if found else ()
        return memo[unit]

    def _ordered(self, unit: Unit, ranks: Ranks) -> list[int]:
        """Members under ``unit`` by rank as of the last refresh."""
        under = self.under.get(unit, ())
        epoch = self._calls // max(REFRESH, len(under) // SPAN)
        cached = self._order.get(unit)
        if cached is not None and cached[0] == epoch:
            return cached[1]
        members, sort = self._members(unit), self._by_rank
        order = by_rank(members, ranks) if sort is None else sort(members)
        self._order[unit] = (epoch, order)
        return order


def by_rank(brokers: Sequence[int], ranks: Ranks) -> list[int]:
    """``brokers`` sorted by rank, brokers of equal rank in their order (``sorted(key=rank)``)."""
    if len(brokers) < 2:
        return list(brokers)
    keys = ranks(brokers)
    return [brokers[i] for i in sorted(range(len(brokers)), key=keys.__getitem__)]
