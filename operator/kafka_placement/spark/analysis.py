"""The snapshot as Spark DataFrames: broker/dir loads by aggregation, partitions to repair by rule.

What the sharded planner needs before its shards run, computed by Spark instead of by the driver.
The partitions arrive as an Arrow table, hash-partitioned by (topic, partition), so every aggregation
per partition below runs inside its Spark partition without a shuffle.

- ``loads()``: bytes and replicas per broker and per dir, a ``groupBy`` over the replicas exploded
  from the partitions (every broker and dir of the snapshot is present, at 0 when empty);
- ``to_repair()``: the partitions the hard goal must change, with the reason. A partition's replicas
  and "broker NUL dir" pairs are tested against the decommissioned brokers and the dirs replicas may
  not stay on (drained, and in reactive-cordon mode the cordoned ones while the replica is empty):
  small sets inlined in the query (a broadcast semi-join without exploding the row). The replication
  factor comes from a broadcast join with each topic's rule. Rack spread joins the exploded replicas
  with the brokers' unit paths, counts replicas per (partition, unit, child unit) and compares the
  children with window functions per (partition, unit) -- the same maximal-spread rule as
  ``planning.topology.RackTree.violation``, written as set operations:

    for every unit U (below the tree's last level) holding ``n >= 2`` of a partition's replicas, with
    ``c(child)`` replicas in each child of U and ``cap(child)`` brokers that could hold one, the
    spread is broken when ``max c - min{c(child) : c(child) < cap(child)} >= 2``; a child of U holding
    none of the partition's replicas counts 0 (and is open, since it has a broker). Holders that may
    not receive (cordoned brokers) add to their units' capacity for that partition only.

The result must equal the pure ``planning.goals.replica_placement.needs_repair`` exactly (tested on
random snapshots), and every plan is checked: the summary's tally counts each hard rule on every
partition after the plan, and should a partition missed here still break one, the engine merges again
reconciling every partition (``spark.engines``). Only these partitions are shipped to the shards.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..model.intents import Intents
from ..model.snapshot import ClusterSnapshot
from ..planning.sharding import ClusterLoads
from ..planning.state import Eligibility
from ..planning.topology import RackTree, Unit
from .io import partitions_table

COLUMNS = ("topic", "partition", "replicas", "dirs", "leader", "isr", "size")  # io.partitions_table
REASONS = ("decommissioned", "drained", "cordonedEmpty", "replicationFactor", "rackSpread")


@dataclass(slots=True)
class SnapshotFrames:
    """One snapshot's partitions in Spark; the intents' rules become small broadcast tables."""

    spark: Any
    snapshot: ClusterSnapshot  # the brokers, and the partitions the DataFrame holds
    partitions: Any  # DataFrame of COLUMNS (an unknown dir or leader is null)
    _replicas: Any = field(default=None)

    @staticmethod
    def of(spark: Any, snapshot: ClusterSnapshot) -> SnapshotFrames:
        """The snapshot's partitions as a DataFrame (from an Arrow table), hash-partitioned by
        (topic, partition) so every later aggregation per partition runs without a shuffle, cached."""
        df = spark.createDataFrame(partitions_table(snapshot))
        return SnapshotFrames(spark, snapshot, df.repartition("topic", "partition").cache())

    def close(self) -> None:
        self.partitions.unpersist()

    @property
    def replicas(self) -> Any:
        """One row per replica: topic, partition, size, pos (0 = preferred leader), broker, dir."""
        if self._replicas is None:
            from pyspark.sql import functions as F

            self._replicas = self.partitions.select(
                "topic", "partition", "size", "dirs", F.posexplode("replicas").alias("pos", "broker")
            ).select(
                "topic",
                "partition",
                "size",
                "pos",
                "broker",
                F.expr("element_at(dirs, pos + 1)").alias("dir"),
            )
        return self._replicas

    # ---- loads -----------------------------------------------------------------------------------------

    def loads(self) -> ClusterLoads:
        """Bytes and replicas per broker and per dir of the snapshot, aggregated by Spark."""
        from pyspark.sql import functions as F

        loads = ClusterLoads({}, {}, {}, {})
        for b in self.snapshot.brokers:
            loads.broker_bytes[b.id] = loads.broker_replicas[b.id] = 0
            for path in b.dir_paths:
                loads.dir_bytes[(b.id, path)] = loads.dir_replicas[(b.id, path)] = 0
        sums = (F.sum("size").alias("bytes"), F.count("*").alias("n"))
        for r in self.replicas.groupBy("broker", "dir").agg(*sums).collect():
            broker, size, n = int(r.broker), int(r.bytes), int(r.n)
            loads.broker_bytes[broker] += size
            loads.broker_replicas[broker] += n
            if r.dir is not None:
                loads.dir_bytes[(broker, str(r.dir))] = size
                loads.dir_replicas[(broker, str(r.dir))] = n
        return loads

    # ---- partitions the hard goal must change ----------------------------------------------------------

    def to_repair(self, intents: Intents) -> Any:
        """The partitions (every one of COLUMNS) that break a hard rule of ``intents``, with one
        boolean column per reason in ``REASONS``."""
        from pyspark.sql import functions as F

        key = ["topic", "partition"]
        elig = Eligibility.of(self.snapshot, intents)
        trees = _trees_of(intents, elig)
        rules = self._topic_rules(intents, trees)
        # Set membership per row (a broadcast semi-join without the explode): "broker NUL dir" pairs.
        pairs = F.zip_with("replicas", "dirs", lambda b, d: F.concat(b.cast("string"), F.lit("\0"), d))
        gone = sorted(elig.cordoned - elig.drained) if elig.reactive_cordon else []
        reasons = {
            "decommissioned": _overlaps(F.col("replicas"), sorted(elig.decommissioned)),
            "drained": _overlaps(pairs, [f"{b}\0{d}" for b, d in sorted(elig.drained)]),
            "cordonedEmpty": (F.col("size") == 0) & _overlaps(pairs, [f"{b}\0{d}" for b, d in gone]),
            "replicationFactor": F.coalesce(F.size("replicas") != F.col("rf"), F.lit(False)),  # null rf: none
            "rackSpread": F.coalesce(F.col("rackSpread"), F.lit(False)),
        }
        out = (
            self.partitions.join(F.broadcast(rules), "topic", "left")
            .join(self._rack_violations(rules, trees), key, "left")
            .select(*COLUMNS, *(reasons[r].alias(r) for r in REASONS))
        )
        return out.where(" OR ".join(REASONS))

    def _table(self, schema: str, rows: list[tuple[Any, ...]]) -> Any:
        return self.spark.createDataFrame(rows, schema=schema)

    def _topic_rules(self, intents: Intents, trees: _TreeTables) -> Any:
        """Each topic's target RF and rack tree number (null when its policy sets none)."""
        rows = []
        for topic in self.snapshot.topics():
            policy = intents.policy_for(topic)
            if policy is None:
                continue
            rf = policy.replication_factor or None
            tree = trees.index.get(policy.name)
            if rf is not None or tree is not None:
                rows.append((topic, rf, tree))
        return self._table("topic string, rf int, tree int", rows)

    def _rack_violations(self, rules: Any, t: _TreeTables) -> Any:
        """(topic, partition, rackSpread=true) for partitions whose rack spread is broken."""
        from pyspark.sql import Window
        from pyspark.sql import functions as F

        units = self._table("tree int, broker int, parent int, child int, member boolean", t.broker_units)
        caps = self._table("tree int, child int, cap int", t.child_caps)
        kids = self._table("tree int, parent int, kids int", t.parent_kids)
        per_child = (
            self.replicas.join(F.broadcast(rules.where("tree IS NOT NULL")), "topic")
            .join(F.broadcast(units), ["tree", "broker"])
            .groupBy("topic", "partition", "tree", "parent", "child")
            .agg(
                F.count("*").alias("c"),
                F.sum(F.when(~F.col("member"), 1).otherwise(0)).alias("outside"),
            )
            .join(F.broadcast(caps), ["tree", "child"], "left")
            .withColumn("capMembers", F.coalesce(F.col("cap"), F.lit(0)))
        )
        w = Window.partitionBy("topic", "partition", "parent")
        spread = (
            per_child.withColumn("n", F.sum("c").over(w))
            .withColumn("most", F.max("c").over(w))
            .withColumn("heldMemberKids", F.sum(F.when(F.col("capMembers") > 0, 1).otherwise(0)).over(w))
            .withColumn(
                "leastOpenHeld",
                F.min(F.when(F.col("c") < F.col("capMembers") + F.col("outside"), F.col("c"))).over(w),
            )
            .join(F.broadcast(kids), ["tree", "parent"], "left")
            .withColumn(
                "leastOpen",
                F.when(F.col("heldMemberKids") < F.coalesce(F.col("kids"), F.lit(0)), F.lit(0)).otherwise(
                    F.col("leastOpenHeld")
                ),
            )
        )
        broken = spread.where(
            (F.col("n") >= 2) & F.col("leastOpen").isNotNull() & (F.col("most") - F.col("leastOpen") >= 2)
        )
        return broken.select("topic", "partition").distinct().withColumn("rackSpread", F.lit(True))


def _overlaps(column: Any, values: list[Any]) -> Any:
    """Whether the array ``column`` holds one of ``values`` (a small set, inlined in the plan)."""
    from pyspark.sql import functions as F

    if not values:
        return F.lit(False)
    return F.coalesce(F.arrays_overlap(column, F.array(*(F.lit(v) for v in values))), F.lit(False))


def shard_column(shards: int) -> Any:
    """``planning.sharding.shard_of`` as a Spark column: CRC-32 of ``topic NUL partition`` mod shards."""
    from pyspark.sql import functions as F

    key = F.concat(F.col("topic"), F.lit("\0"), F.col("partition").cast("string"))
    return (F.crc32(key) % shards).cast("int")


@dataclass(slots=True)
class _TreeTables:
    """The rack trees of the intents' policies as rows: units per broker, capacities, children."""

    index: dict[str, int]  # policy name -> tree number
    broker_units: list[tuple[int, int, int, int, bool]]  # tree, broker, parent unit, child unit, member
    child_caps: list[tuple[int, int, int]]  # tree, unit, members under it
    parent_kids: list[tuple[int, int, int]]  # tree, unit, children with a member


def _trees_of(intents: Intents, elig: Eligibility) -> _TreeTables:
    receivers = [b for b in elig.dirs if elig.may_receive(b)]
    out = _TreeTables({}, [], [], [])
    by_rule: dict[object, int] = {}
    for policy in intents.policies:
        if policy.rack_awareness is None:
            continue
        rule = policy.rack_awareness
        if rule in by_rule:
            out.index[policy.name] = by_rule[rule]
            continue
        n = by_rule[rule] = out.index[policy.name] = len(by_rule)
        tree = RackTree.of(elig.racks, rule, receivers)
        every = {p[:depth] for p in tree.path.values() for depth in range(tree.levels + 1)}
        uid: dict[Unit, int] = {u: i for i, u in enumerate(sorted(every))}
        for b, path in sorted(tree.path.items()):
            for depth in range(tree.levels):
                out.broker_units.append((n, b, uid[path[:depth]], uid[path[: depth + 1]], b in tree.members))
        out.child_caps.extend((n, uid[u], cap) for u, cap in tree.capacity.items() if u)
        out.parent_kids.extend((n, uid[u], len(c)) for u, c in tree.children.items())
    return out


__all__ = ["COLUMNS", "REASONS", "SnapshotFrames", "shard_column"]
