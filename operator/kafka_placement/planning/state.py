"""The planner's working state: what each broker and dir may hold, and the mutable assignment.

``Eligibility`` turns a snapshot plus intents into per-broker and per-dir rules (decommissioned,
cordoned, drained, and the disk headroom: each dir's volume, its room under ``maxDiskShare`` and the dirs
above it, ``headroom.py``). ``Assignment`` is the placement being planned: replicas and dirs per
partition with incrementally maintained loads (bytes, replicas, leaders per broker and per dir), so
goals can evaluate a candidate move in O(1). Pure: no I/O, no clock.

Traffic (a snapshot with ``bytesInPerSec``): the assignment also keeps each broker's network in (the sum
over its replicas of their partition's bytes in) and network out (over the partitions it leads, bytes in x
(followers + read fan-out)), as ``planning/loads.py`` defines them, updated by every mutation at a cost of
the partition's replicas. A partition without a rate counts nothing (it is neither hot nor idle: unknown);
a snapshot without any rate keeps no traffic state at all (``rate`` empty), so planning is unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain
from typing import Any

from ..model.intents import Intents, PlacementPolicy
from ..model.jsonio import INT64_MAX
from ..model.snapshot import ClusterSnapshot
from . import headroom
from .headroom import Volume

Key = tuple[str, int]
DirKey = tuple[int, str]


# A new partition of at most this many bytes is "still small": the operator's new-partition lane moves it
# unthrottled (reconcile/new_partitions.py), and on a cluster that cannot cordon dirs itself (Kafka < 4.3,
# no KIP-1066) moves a new replica of up to this size off a cordoned dir (``Intents.reactive_max_bytes``).
SMALL_REPLICA_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class Eligibility:
    """Where replicas may stay and where new ones may go, derived from the intents."""

    decommissioned: frozenset[int]
    cordoned: frozenset[DirKey]  # no new replica (intents and dirs Kafka already reports cordoned)
    drained: frozenset[DirKey]  # no replica at all
    offline: frozenset[DirKey]
    dirs: dict[int, tuple[str, ...]]
    racks: dict[int, str | None]
    cordoned_brokers: frozenset[int]  # every dir cordoned: no new replica on the broker
    keeping: frozenset[int]  # brokers that may keep holding replicas (``broker_may_keep``)
    # every dir cordoned in Kafka itself (not reactive): Kafka refuses a reassignment naming such a broker
    # (``pins``), so a partition with a replica there changes only by moving that replica off
    pinned: frozenset[int] = frozenset()
    reactive_cordon: bool = False  # new replicas on cordoned dirs must move (Kafka < 4.3)...
    reactive_max_bytes: int = 0  # ...while they hold at most this (0: only empty ones)
    dead: frozenset[int] = frozenset()  # brokers not alive: their replicas are lost
    # disk headroom (planning/headroom.py): the limit, each dir of known size -> its volume, each volume's
    # size and free bytes, and the dirs above the limit before the plan (they receive nothing)
    share: float = headroom.DEFAULT_MAX_DISK_SHARE
    volume: dict[DirKey, DirKey] = field(default_factory=dict)
    volumes: dict[DirKey, Volume] = field(default_factory=dict)
    full: frozenset[DirKey] = frozenset()
    # per broker whose dirs' volumes are all of known size and not all equal: each dir's volume size. Dir
    # balance compares those dirs' shares of their volumes (bytes / size), not their bytes (a small disk
    # is not filled to match a big one); a broker absent compares bytes, as with equal volumes.
    sizes: dict[int, dict[str, int]] = field(default_factory=dict)
    # dirs to relieve (a LogDirCordon's relieveBelowShare): each one's volume planned under this share of
    # its size, by moving the fewest bytes off it (goals/disk_relief.py)
    relieve: dict[DirKey, float] = field(default_factory=dict)
    # per broker whose dirs all sit on volumes of known size: the sum of those volumes' sizes (a volume
    # two dirs share counted once; a drained or offline dir's too: capacity is the hardware's, and a cordon
    # or a failed disk passes). Broker balance compares shares of it where brokers' capacities differ
    # (planning/shares.py)
    capacity: dict[int, int] = field(default_factory=dict)

    @staticmethod
    def of(snapshot: ClusterSnapshot, intents: Intents) -> Eligibility:
        cordoned: set[DirKey] = set()
        drained: set[DirKey] = set()
        offline: set[DirKey] = set()
        dirs: dict[int, tuple[str, ...]] = {}
        for b in snapshot.brokers:
            dirs[b.id] = b.dir_paths
            for d in b.log_dirs:
                if d.cordoned:
                    cordoned.add((b.id, d.path))
                if not d.online:
                    offline.add((b.id, d.path))
        relieve: dict[DirKey, float] = {}
        for c in intents.cordons:
            paths = dirs.get(c.broker, ()) if c.whole_broker else c.log_dirs
            for path in paths:
                cordoned.add((c.broker, path))
                if c.drain:
                    drained.add((c.broker, path))
                if c.relieve_below_share is not None:
                    at = (c.broker, path)
                    relieve[at] = min(relieve.get(at, 1.0), c.relieve_below_share)
        fully = frozenset(
            b
            for b, paths in dirs.items()
            if paths and all((b, p) in cordoned or (b, p) in offline for p in paths)
        )
        pinned = frozenset(
            b
            for b, paths in dirs.items()
            if not intents.reactive_cordon and paths and all((b, p) in cordoned for p in paths)
        )
        share = intents.max_disk_share
        volume, sizes = headroom.volumes(snapshot, intents.disk_per_log_dir)
        return Eligibility(
            decommissioned=intents.decommissioned,
            cordoned=frozenset(cordoned),
            drained=frozenset(drained),
            offline=frozenset(offline),
            dirs=dirs,
            racks={b.id: b.rack for b in snapshot.brokers},
            cordoned_brokers=fully,
            pinned=pinned,
            keeping=frozenset(
                b
                for b, paths in dirs.items()
                if b not in intents.decommissioned and any((b, p) not in drained for p in paths)
            ),
            reactive_cordon=intents.reactive_cordon,
            reactive_max_bytes=intents.reactive_max_bytes,
            dead=frozenset(b.id for b in snapshot.brokers if not b.alive),
            share=share,
            volume=volume,
            volumes=sizes,
            full=frozenset(headroom.above_limit(volume, sizes, share)),
            sizes=headroom.uneven(dirs, volume, sizes),
            relieve=relieve,
            capacity=_capacities(dirs, volume, sizes),
        )

    def rooms(self, held: Mapping[DirKey, int]) -> dict[DirKey, int]:
        """Each volume's room under the limit (``headroom.room``), its dirs holding ``held`` bytes of
        replicas in the snapshot; volumes of unknown size are absent (no limit)."""
        return headroom.rooms(self.volume, self.volumes, held, self.share)

    @property
    def sized(self) -> bool:
        """Whether any dir's volume size is known (some dir has a limit)."""
        return bool(self.volumes)

    def reactive_moves(self, size: int | None) -> bool:
        """A replica of ``size`` bytes (None: unknown) on a cordoned dir must move (reactive cordon)."""
        return self.reactive_cordon and size is not None and size <= self.reactive_max_bytes

    def lost(self, replicas: Sequence[int], dirs: Sequence[str | None]) -> bool:
        """Every replica is on a dead broker or a failed dir: no copy is left to move or repair from."""
        pairs = zip(replicas, dirs, strict=True)
        return all(b in self.dead or (d is not None and (b, d) in self.offline) for b, d in pairs)

    def may_receive(self, broker: int) -> bool:
        """A new replica may be placed on the broker (on at least one of its dirs)."""
        return (
            broker not in self.decommissioned and broker not in self.cordoned_brokers and broker in self.dirs
        )

    def dir_may_receive(self, broker: int, path: str) -> bool:
        """A new replica may be placed on the dir: not cordoned, online, and its volume not above the
        disk headroom limit before the plan (``headroom``)."""
        place = (broker, path)
        return place not in self.cordoned and place not in self.offline and place not in self.full

    def may_keep(self, broker: int, path: str | None, size: int | None = None) -> bool:
        """An existing replica (of ``size`` bytes, when known) may stay where it is."""
        if broker in self.decommissioned:
            return False
        if path is None:
            return True
        if self.reactive_moves(size) and (broker, path) in self.cordoned:
            return False  # appeared on a cordoned dir the cluster could not protect; still small: move it
        return (broker, path) not in self.drained

    def pins(self, before: Sequence[int], after: Sequence[int]) -> bool:
        """Kafka refuses changing a partition's replicas from ``before`` to ``after`` (a move or a
        reorder) because ``after`` names a broker whose every log dir is cordoned: the controller checks
        every broker of a reassignment's target (KAFKA-20832: Kafka 4.4, and 4.3 after 4.3.1). The
        planner assumes it on every cluster that cordons natively (it cannot read the controller's
        release); a change that moves the replica off such a broker is accepted."""
        return bool(self.pinned) and list(after) != list(before) and not self.pinned.isdisjoint(after)

    def broker_may_keep(self, broker: int) -> bool:
        """The broker may keep holding replicas (possibly after an intra-broker dir move): it is not
        decommissioned and has a dir that is not drained."""
        return broker in self.keeping

    @property
    def active_brokers(self) -> tuple[int, ...]:
        """Brokers that hold data after the plan: the denominators of balance."""
        return tuple(sorted(self.keeping))

    def keeping_dirs(self, broker: int) -> list[str]:
        """The broker's dirs that keep data (not drained, online): the ones dir balance evens out."""
        drained, offline = self.drained, self.offline
        return [
            p for p in self.dirs.get(broker, ()) if (broker, p) not in drained and (broker, p) not in offline
        ]


def _capacities(
    dirs: Mapping[int, tuple[str, ...]],
    volume: Mapping[DirKey, DirKey],
    sizes: Mapping[DirKey, Volume],
) -> dict[int, int]:
    """Each broker's disk capacity for balance (``Eligibility.capacity``): the sizes of the distinct volumes
    of its dirs; absent when one of its dirs has no known size, or it has none."""
    out: dict[int, int] = {}
    for b, paths in dirs.items():
        keys = [volume.get((b, p)) for p in paths]
        if keys and all(k is not None for k in keys):
            out[b] = sum(sizes[k].total for k in set(keys) if k is not None)
    return out


@dataclass(frozen=True, slots=True)
class ClusterLoads:
    """Bytes and replicas per broker and per dir, kept apart from an ``Assignment``: the cluster's (the
    Spark engine's analysis sums them) or what some placements change (``change``; negative: less)."""

    broker_bytes: dict[int, int]
    broker_replicas: dict[int, int]
    dir_bytes: dict[DirKey, int]
    dir_replicas: dict[DirKey, int]

    @staticmethod
    def none() -> ClusterLoads:
        return ClusterLoads({}, {}, {}, {})

    @staticmethod
    def change(before: ClusterLoads, after: ClusterLoads) -> ClusterLoads:
        """``after`` minus ``before`` (only what differs)."""
        return ClusterLoads(*(_minus(b, a) for b, a in zip(before.parts(), after.parts(), strict=True)))

    @staticmethod
    def copy_of(a: Assignment) -> ClusterLoads:
        """The assignment's loads as they are now."""
        return ClusterLoads(
            dict(a.broker_bytes), dict(a.broker_replicas), dict(a.dir_bytes), dict(a.dir_replicas)
        )

    def parts(self) -> tuple[dict[Any, int], ...]:
        return self.broker_bytes, self.broker_replicas, self.dir_bytes, self.dir_replicas

    def add(self, other: ClusterLoads) -> ClusterLoads:
        """Add ``other`` into these loads; returns them."""
        for mine, theirs in zip(self.parts(), other.parts(), strict=True):
            for k, v in theirs.items():
                mine[k] = mine.get(k, 0) + v
        return self


def _minus(before: Mapping[Any, int], after: Mapping[Any, int]) -> dict[Any, int]:
    return {k: v - before.get(k, 0) for k, v in after.items() if v != before.get(k, 0)}


@dataclass(slots=True)
class Assignment:
    """Mutable placement with incrementally maintained loads; the planner's single source of truth."""

    replicas: dict[Key, list[int]]
    dirs: dict[Key, list[str | None]]
    size: dict[Key, int]
    topic_policy: dict[str, PlacementPolicy | None]
    broker_bytes: dict[int, int] = field(default_factory=dict)
    broker_replicas: dict[int, int] = field(default_factory=dict)
    broker_leaders: dict[int, int] = field(default_factory=dict)
    dir_bytes: dict[DirKey, int] = field(default_factory=dict)
    dir_replicas: dict[DirKey, int] = field(default_factory=dict)
    # room left under the disk headroom limit per volume (``Eligibility.rooms``; negative: above it), and
    # each dir of known size -> its volume (``Eligibility.volume``): a dir without one has no limit
    free: dict[DirKey, int] = field(default_factory=dict)
    vol: dict[DirKey, DirKey] = field(default_factory=dict)
    room0: dict[DirKey, int] = field(default_factory=dict)  # ``free`` before any move of this plan
    by_broker: dict[int, dict[Key, str | None]] = field(default_factory=dict)  # partitions -> their dir there
    touched: set[Key] = field(default_factory=set)  # partitions whose replicas, order or dirs were set
    # traffic (module docstring): bytes in per second and read fan-out of the partitions with a rate, and
    # each broker's network in and out; all empty when the snapshot has no rate
    rate: dict[Key, float] = field(default_factory=dict)
    fanout: dict[Key, int] = field(default_factory=dict)
    net_in: dict[int, float] = field(default_factory=dict)
    net_out: dict[int, float] = field(default_factory=dict)
    lead_in: dict[int, float] = field(default_factory=dict)  # the bytes in of the partitions it leads
    # per broker, the partitions with a rate > 0 it leads (``rated_led``) and those it holds
    # (``rated_on``): both built on first use, in one pass over the rated partitions, then kept by every
    # mutation (a set each: the network goals intersect them instead of scanning replicas)
    _led: dict[int, set[Key]] | None = None
    _on: dict[int, set[Key]] | None = None
    _hot: frozenset[Key] | None = None  # the partitions with a rate > 0 (``rated``)

    @staticmethod
    def of(snapshot: ClusterSnapshot, intents: Intents, elig: Eligibility) -> Assignment:
        """The snapshot's placement and its loads. Every replica's broker, dir and size are laid out
        in arrays once and sorted by broker; each broker's partitions and loads are then read off its
        run of the sort (a dict per broker, built from slices, not one insertion per replica)."""
        import numpy as np  # (here: most commands that load this module never plan)

        parts = snapshot.partitions
        keys = snapshot.keys()
        # one number per partition serves as disk load and as move cost: the local size is both (a
        # replica's copy_bytes, model/snapshot.py, is its size_bytes)
        part_sizes = [p.size_bytes for p in parts]
        a = Assignment(  # (one key tuple per partition, shared by every dict)
            replicas=dict(zip(keys, (list(p.replicas) for p in parts), strict=True)),
            dirs=dict(zip(keys, (list(p.log_dirs) for p in parts), strict=True)),
            size=dict(zip(keys, part_sizes, strict=True)),
            topic_policy={t: intents.policy_for(t) for t in snapshot.topics()},
        )
        a.vol = elig.volume
        counts = np.fromiter((len(p.replicas) for p in parts), np.intp, len(parts))
        total = int(counts.sum())
        brokers = np.fromiter(chain.from_iterable(p.replicas for p in parts), np.int64, total)
        owner = np.repeat(np.arange(len(parts)), counts)  # the partition of each replica
        dir_list = list(chain.from_iterable(p.log_dirs for p in parts))
        dirs = np.fromiter(dir_list, object, total)
        paths = {d: i for i, d in enumerate(dict.fromkeys(dir_list))}
        dir_code = np.fromiter(map(paths.__getitem__, dir_list), np.intp, total)
        # bytes as int64 unless a sum could overflow it (hostile sizes: Python ints, exact but slower);
        # a broker holds a partition once, so no broker's or dir's sum exceeds the sum of all sizes
        wide = sum(part_sizes) > INT64_MAX
        sizes = np.fromiter(part_sizes, object if wide else np.int64, len(parts))[owner]
        order = np.argsort(brokers, kind="stable")  # each broker's replicas in the snapshot's order
        ids = list(elig.dirs)
        sorted_brokers, id_array = brokers[order], np.array(ids, np.int64)
        runs = np.searchsorted(sorted_brokers, id_array, side="left")
        ends = np.searchsorted(sorted_brokers, id_array, side="right")
        if int((ends - runs).sum()) != total:  # a replica on a broker the rules do not know
            raise KeyError(sorted(set(brokers.tolist()) - set(ids))[0])
        key_of = np.fromiter(keys, object, len(keys))[owner[order]]
        dir_of, code_of, size_of = dirs[order], dir_code[order], sizes[order]
        for b, lo, hi in zip(ids, runs.tolist(), ends.tolist(), strict=True):
            a.by_broker[b] = dict(zip(key_of[lo:hi].tolist(), dir_of[lo:hi].tolist(), strict=True))
            held, on_dir = size_of[lo:hi], code_of[lo:hi]
            a.broker_bytes[b] = int(held.sum())
            a.broker_replicas[b] = hi - lo
            for path in elig.dirs[b]:
                on = on_dir == paths.get(path, -1)
                a.dir_bytes[(b, path)] = int(held[on].sum())
                a.dir_replicas[(b, path)] = int(np.count_nonzero(on))
        a.broker_leaders = dict.fromkeys(ids, 0)
        leaders, led = np.unique(brokers[np.cumsum(counts) - counts], return_counts=True)
        a.broker_leaders.update(zip(leaders.tolist(), led.tolist(), strict=True))
        a.free = elig.rooms(a.dir_bytes)
        a.room0 = dict(a.free)
        a._traffic_of(parts, ids, brokers, counts)
        return a

    def _traffic_of(self, parts: Sequence[Any], ids: Sequence[int], brokers: Any, counts: Any) -> None:
        """The rates of the snapshot's partitions that have one, and each broker's network in and out,
        summed over arrays (``brokers``: each replica's broker, partition by partition; ``counts``: each
        partition's replicas), as ``of`` laid them out."""
        import numpy as np

        rated = [p for p in parts if p.bytes_in_per_sec is not None]
        if not rated:
            return
        self.rate = {p.key: float(p.bytes_in_per_sec) for p in rated}
        self.fanout = {p.key: p.read_fanout for p in rated if p.read_fanout}
        n = len(parts)
        rate = np.fromiter((p.bytes_in_per_sec or 0.0 for p in parts), np.float64, n)
        fanout = np.fromiter((p.read_fanout or 0 for p in parts), np.float64, n)
        found, at = np.unique(brokers, return_inverse=True)
        width = len(found)
        net_in = np.bincount(at, weights=np.repeat(rate, counts), minlength=width)
        lead_at = at[np.cumsum(counts) - counts]  # each partition's leader (its first replica)
        net_out = np.bincount(lead_at, weights=rate * (counts - 1 + fanout), minlength=width)
        lead_in = np.bincount(lead_at, weights=rate, minlength=width)
        self.net_in = dict.fromkeys(ids, 0.0)
        self.net_out = dict.fromkeys(ids, 0.0)
        self.lead_in = dict.fromkeys(ids, 0.0)
        sums = zip(found.tolist(), net_in.tolist(), net_out.tolist(), lead_in.tolist(), strict=True)
        for b, x, y, z in sums:
            self.net_in[b], self.net_out[b], self.lead_in[b] = x, y, z

    def rated(self) -> frozenset[Key]:
        """The partitions with a rate > 0 (computed once: rates do not change while planning)."""
        if self._hot is None:
            self._hot = frozenset(k for k, r in self.rate.items() if r > 0)
        return self._hot

    def rated_led(self, broker: int) -> set[Key]:
        """The partitions with a rate > 0 that ``broker`` leads now (do not mutate). The index is built
        at the first call (``_index_rated``) and kept exact by every mutation afterwards."""
        led = self._led if self._led is not None else self._index_rated()[0]
        return led.setdefault(broker, set())

    def rated_on(self, broker: int) -> set[Key]:
        """The partitions with a rate > 0 that have a replica on ``broker`` now (do not mutate): the
        rated part of ``by_broker[broker]``, without a look at each of its partitions (at a million
        partitions, intersecting a broker's partitions with the rated ones cost ~10 ms per broker)."""
        on = self._on if self._on is not None else self._index_rated()[1]
        return on.setdefault(broker, set())

    def _index_rated(self) -> tuple[dict[int, set[Key]], dict[int, set[Key]]]:
        """Both indexes of the rated partitions (``rated_led``, ``rated_on``), in one pass over them."""
        led: dict[int, set[Key]] = {b: set() for b in self.by_broker}
        on: dict[int, set[Key]] = {b: set() for b in self.by_broker}
        reps = self.replicas
        for k, r in self.rate.items():
            if r > 0:
                found = reps[k]
                led.setdefault(found[0], set()).add(k)
                for b in found:
                    on.setdefault(b, set()).add(k)
        self._led, self._on = led, on
        return led, on

    def _rated_leaves(self, key: Key, broker: int) -> None:
        """``key`` no longer has a replica on ``broker``: the ``rated_on`` index, once built."""
        if self._on is not None and self.rate.get(key, 0.0) > 0:
            self._on[broker].discard(key)

    def _rated_enters(self, key: Key, broker: int) -> None:
        """``key`` has a replica on ``broker`` now: the ``rated_on`` index, once built."""
        if self._on is not None and self.rate.get(key, 0.0) > 0:
            self._on.setdefault(broker, set()).add(key)

    def _relead(self, key: Key, old: int, new: int) -> None:
        """``key`` (rated) is led by ``new`` instead of ``old``: the ``rated_led`` index, once built."""
        led = self._led
        if led is not None and old != new and self.rate[key] > 0:
            led[old].discard(key)
            led.setdefault(new, set()).add(key)

    def out_of(self, key: Key, replicas: int) -> float:
        """What the leader of ``key`` sends per second with ``replicas`` replicas (0 without a rate)."""
        r = self.rate.get(key)
        return 0.0 if r is None else r * (replicas - 1 + self.fanout.get(key, 0))

    def _traffic_swap(self, key: Key, old: Sequence[int], new: Sequence[int]) -> None:
        """Network in and out after ``key``'s replicas went from ``old`` to ``new`` (in order)."""
        r = self.rate.get(key)
        if r is None:
            return
        net_in, net_out = self.net_in, self.net_out
        for b in old:
            if b not in new:
                net_in[b] -= r
        for b in new:
            if b not in old:
                net_in[b] = net_in.get(b, 0.0) + r
        net_out[old[0]] -= self.out_of(key, len(old))
        net_out[new[0]] = net_out.get(new[0], 0.0) + self.out_of(key, len(new))
        self.lead_in[old[0]] -= r
        self.lead_in[new[0]] = self.lead_in.get(new[0], 0.0) + r
        self._relead(key, old[0], new[0])

    def policy(self, key: Key) -> PlacementPolicy | None:
        return self.topic_policy.get(key[0])

    def fits(self, broker: int, path: str, size: int) -> bool:
        """A replica of ``size`` bytes fits on the dir under the disk headroom limit (O(1))."""
        v = self.vol.get((broker, path))
        return v is None or self.free[v] >= size

    def room(self, broker: int, path: str) -> int | None:
        """The bytes the dir's volume may still receive under the limit (None: no limit)."""
        v = self.vol.get((broker, path))
        return None if v is None else self.free[v]

    # ---- mutations (each keeps every load index exact) -----------------------------------------------

    def _leave(self, key: Key, broker: int, path: str | None, size: int) -> None:
        self.broker_bytes[broker] -= size
        self.broker_replicas[broker] -= 1
        self.by_broker[broker].pop(key, None)
        self._rated_leaves(key, broker)
        if path is not None:
            self.dir_bytes[(broker, path)] -= size
            self.dir_replicas[(broker, path)] -= 1
            v = self.vol.get((broker, path))
            if v is not None:
                self.free[v] += size

    def _enter(self, key: Key, broker: int, path: str | None, size: int) -> None:
        self.broker_bytes[broker] += size
        self.broker_replicas[broker] += 1
        self.by_broker[broker][key] = path
        self._rated_enters(key, broker)
        if path is not None:
            self.dir_bytes[(broker, path)] += size
            self.dir_replicas[(broker, path)] += 1
            v = self.vol.get((broker, path))
            if v is not None:
                self.free[v] -= size

    def add_partition(self, key: Key, replicas: list[int], dirs: list[str | None], size: int = 0) -> None:
        """Register a partition that does not exist yet (``place``)."""
        self.replicas[key] = list(replicas)
        self.dirs[key] = list(dirs)
        self.size[key] = size
        self.touched.add(key)
        for b, d in zip(replicas, dirs, strict=True):
            self._enter(key, b, d, size)
        self.broker_leaders[replicas[0]] += 1

    def set_placement(self, key: Key, replicas: Sequence[int], dirs: Sequence[str | None]) -> None:
        """Replace a partition's replicas (in order) and dirs, updating every load."""
        size = self.size[key]
        leaving, entering = self._swap(key, replicas, dirs)
        for b, d in leaving:
            self._leave(key, b, d, size)
        for b, d in entering:
            self._enter(key, b, d, size)

    def set_placements(
        self, placements: Iterable[tuple[Key, Sequence[int], Sequence[str | None]]], change: ClusterLoads
    ) -> None:
        """``set_placement`` of each partition in turn, where ``change`` is known to be what they change
        in the bytes and replicas per broker and dir (a shard's assignment tracked it): those loads are
        updated once per broker and dir instead of per replica (at a million partitions the Spark
        engine's merge applies a few hundred thousand, and those updates were ~40% of that work). The
        rest of ``_swap`` is inlined: a replica list has distinct brokers, so a (broker, dir) pair that
        stays neither leaves nor enters."""
        by_broker, replicas_of, dirs_of = self.by_broker, self.replicas, self.dirs
        leaders = self.broker_leaders
        for key, replicas, dirs in placements:
            before = list(zip(replicas_of[key], dirs_of[key], strict=True))
            after = list(zip(replicas, dirs, strict=True))
            leaders[before[0][0]] -= 1
            leaders[after[0][0]] += 1
            if self.rate:
                self._traffic_swap(key, replicas_of[key], replicas)
            for pair in before:
                if pair not in after:
                    by_broker[pair[0]].pop(key, None)
                    self._rated_leaves(key, pair[0])
            for pair in after:
                if pair not in before:
                    by_broker[pair[0]][key] = pair[1]
                    self._rated_enters(key, pair[0])
            replicas_of[key] = list(replicas)
            dirs_of[key] = list(dirs)
            self.touched.add(key)
        for b, v in change.broker_bytes.items():
            self.broker_bytes[b] += v
        for b, v in change.broker_replicas.items():
            self.broker_replicas[b] += v
        for place, v in change.dir_bytes.items():
            self.dir_bytes[place] += v
            volume = self.vol.get(place)
            if volume is not None:
                self.free[volume] -= v
        for place, v in change.dir_replicas.items():
            self.dir_replicas[place] += v

    def _swap(
        self, key: Key, replicas: Sequence[int], dirs: Sequence[str | None]
    ) -> tuple[list[tuple[int, str | None]], list[tuple[int, str | None]]]:
        """Set a partition's replicas and dirs (and its leader's count); the (broker, dir) slots it left
        and entered, whose other loads the caller updates."""
        old_r, old_d = self.replicas[key], self.dirs[key]
        self.broker_leaders[old_r[0]] -= 1
        if self.rate:
            self._traffic_swap(key, old_r, replicas)
        before = list(zip(old_r, old_d, strict=True))
        after = list(zip(replicas, dirs, strict=True))
        if len(set(before)) == len(before) and len(set(after)) == len(after):
            # a replica that stays on its broker and dir neither leaves nor enters (its loads are net 0)
            before, after = [x for x in before if x not in after], [x for x in after if x not in before]
        self.broker_leaders[replicas[0]] += 1
        self.replicas[key] = list(replicas)
        self.dirs[key] = list(dirs)
        self.touched.add(key)
        return before, after

    def move(self, key: Key, index: int, broker: int, path: str | None) -> None:
        """Move the replica at ``index`` to ``broker``/``path`` (same slot in the replica order)."""
        reps = list(self.replicas[key])
        dirs = list(self.dirs[key])
        reps[index] = broker
        dirs[index] = path
        self.set_placement(key, reps, dirs)

    def make_leader(self, key: Key, index: int) -> None:
        """Reorder so the replica at ``index`` becomes the preferred leader (moves no data)."""
        reps = list(self.replicas[key])
        dirs = list(self.dirs[key])
        if key in self.rate:  # the same replicas: only the leaders' network out changes
            out = self.out_of(key, len(reps))
            self.net_out[reps[0]] -= out
            self.net_out[reps[index]] += out
            self.lead_in[reps[0]] -= self.rate[key]
            self.lead_in[reps[index]] += self.rate[key]
            self._relead(key, reps[0], reps[index])
        reps[0], reps[index] = reps[index], reps[0]
        dirs[0], dirs[index] = dirs[index], dirs[0]
        self.broker_leaders[reps[index]] -= 1  # the same replicas and dirs: only the leader counts change
        self.broker_leaders[reps[0]] += 1
        self.replicas[key] = reps
        self.dirs[key] = dirs
        self.touched.add(key)

    def has_room(self, elig: Eligibility, broker: int, size: int) -> bool:
        """Whether ``best_dir`` finds a dir of ``broker`` for a new replica of ``size`` bytes (the first that
        may receive it and has room answers: the rack repair asks it of many brokers)."""
        fits = self.fits
        for path in elig.dirs.get(broker, ()):
            if elig.dir_may_receive(broker, path) and fits(broker, path, size):
                return True
        return False

    def best_dir(self, elig: Eligibility, broker: int, size: int, exclude: Iterable[str] = ()) -> str | None:
        """The least-loaded dir of ``broker`` that may receive a new replica of ``size`` bytes and has
        room for it under the disk headroom limit (least loaded: fewest bytes, or the lowest share of its
        volume where the broker's volumes differ in size, ``Eligibility.sizes``)."""
        skip = set(exclude)
        best: str | None = None
        best_load: tuple[float, int] = (0, 0)
        sizes = elig.sizes.get(broker)  # volumes of different sizes: the lowest share of its volume
        for path in elig.dirs.get(broker, ()):
            if path in skip or not elig.dir_may_receive(broker, path) or not self.fits(broker, path, size):
                continue
            held = self.dir_bytes[(broker, path)]
            load = (held if sizes is None else held / sizes[path], self.dir_replicas[(broker, path)])
            if best is None or load < best_load:
                best, best_load = path, load
        return best
