"""Baseline: the naive greedy a human would script, to benchmark the planner against.

``naive_greedy_plan`` ignores racks, leaders, move cost and dir balance:

1. every replica on a decommissioned broker or a drained ``(broker, dir)`` goes to the broker with the fewest
   bytes that does not hold the partition (ties: lowest id), into that broker's first dir (the first one not
   being drained, if it has one), keeping its position in the replica list;
2. with ``balance``, it then repeatedly moves the largest replica of the most loaded broker that still narrows
   the gap to the least loaded broker (and is not already there) onto the least loaded one, until
   max/mean broker bytes <= ``tolerance`` (1.05), no such replica exists, or ``max_moves`` moves.

Pure Python and deterministic: no randomness, every tie broken by id / (topic, partition).
"""

from __future__ import annotations

import bisect

from kafka_placement.model.plan import ANY_DIR, PartitionTarget, Plan
from kafka_placement.model.snapshot import ClusterSnapshot

Key = tuple[str, int]


def naive_greedy_plan(
    snapshot: ClusterSnapshot,
    decommissioned: set[int],
    drained: set[tuple[int, str]],
    balance: bool,
    *,
    tolerance: float = 1.05,
    max_moves: int = 100_000,
) -> Plan:
    targets = [b for b in snapshot.brokers if b.id not in decommissioned]
    first_dir: dict[int, str] = {}
    for b in targets:
        paths = b.dir_paths
        ok = [d for d in paths if (b.id, d) not in drained]
        first_dir[b.id] = (ok or list(paths) or [ANY_DIR])[0]

    load: dict[int, int] = {b.id: 0 for b in snapshot.brokers}
    size: dict[Key, int] = {}
    reps: dict[Key, list[int]] = {}
    dirs: dict[Key, list[str]] = {}
    for p in snapshot.partitions:
        size[p.key] = p.size_bytes
        reps[p.key] = list(p.replicas)
        dirs[p.key] = [d or ANY_DIR for d in p.log_dirs]
        for b in p.replicas:
            load[b] = load.get(b, 0) + p.size_bytes

    def move(key: Key, i: int, dest: int) -> None:
        load[reps[key][i]] -= size[key]
        load[dest] += size[key]
        reps[key][i] = dest
        dirs[key][i] = first_dir[dest]

    # 1. evacuate decommissioned brokers and drained dirs
    for key in sorted(reps):
        for i, b in enumerate(reps[key]):
            if b not in decommissioned and (b, dirs[key][i]) not in drained:
                continue
            free = [t.id for t in targets if t.id not in reps[key]]
            if free:
                move(key, i, min(free, key=lambda t: (load[t], t)))

    # 2. greedy rebalance over the remaining brokers
    if balance and len(targets) > 1:
        ids = [b.id for b in targets]
        # per broker: its replicas as (-size, key), i.e. largest first
        held: dict[int, list[tuple[int, Key]]] = {b: [] for b in ids}
        for key, rs in reps.items():
            for b in rs:
                if b in held:
                    held[b].append((-size[key], key))
        for lst in held.values():
            lst.sort()
        for _ in range(max_moves):
            mean = sum(load[b] for b in ids) / len(ids)
            hi = max(ids, key=lambda b: (load[b], -b))
            lo = min(ids, key=lambda b: (load[b], b))
            if mean <= 0 or load[hi] / mean <= tolerance:
                break
            gap = load[hi] - load[lo]
            lst = held[hi]
            # first (largest) replica strictly smaller than the gap: moving it lowers the hi-lo spread
            j = bisect.bisect_right(lst, -gap, key=lambda e: e[0])
            while j < len(lst) and lo in reps[lst[j][1]]:
                j += 1
            if j == len(lst) or lst[j][0] == 0:
                break
            neg, key = lst.pop(j)
            move(key, reps[key].index(hi), lo)
            bisect.insort(held[lo], (neg, key))

    out = []
    for p in snapshot.partitions:
        new_dirs = tuple(dirs[p.key])
        if tuple(reps[p.key]) != p.replicas or new_dirs != tuple(d or ANY_DIR for d in p.log_dirs):
            out.append(PartitionTarget(p.topic, p.partition, tuple(reps[p.key]), new_dirs))
    return Plan.of(out)
