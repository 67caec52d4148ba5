"""A Parquet snapshot's partitions read column by column: the rows checked all at once by Arrow and numpy,
then made into partitions without a document per row.

``partitions`` gives exactly the partitions that parsing each row as a snapshot file's partition gives
(``model.snapshot``'s ``_fast_partition``; like it, holding one object per topic name, dir path and broker
id), or None as soon as anything is not plainly valid: a column of another Arrow type, a null where a
value is required, a value out of range, an unknown broker or dir, a repeated replica or partition, a
leader or in-sync replica that is not a replica, an illegal topic name. The caller
(``spark.io.read_snapshot``) then parses the rows one by one, and that parse says what is wrong. At a
million partitions: 4.85 s instead of 11.65 (docs/benchmarks.md, the CLI's plan end to end).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..model.jsonio import legal_topic
from ..model.snapshot import Broker, PartitionState

ANY = "any"  # a dir left to Kafka, read as unknown (None) as in a snapshot file


def partitions(table: Any, brokers: Sequence[Broker]) -> tuple[PartitionState, ...] | None:
    """The partitions of ``table`` (``io.partitions_table``'s columns, as ``io.write_parquet`` writes
    them) on ``brokers``, in row order; None when a row is not plainly valid (module docstring)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from .io import TRAFFIC_COLUMNS, partitions_schema, traffic_types  # (io reads with this module)

    schema = partitions_schema()
    kinds = dict(zip(schema.names, schema.types, strict=True))
    kinds.update(zip(TRAFFIC_COLUMNS, traffic_types(), strict=True))
    names = set(table.column_names)
    cols: dict[str, Any] = {}
    for name, kind in kinds.items():
        if name not in names:
            if name in TRAFFIC_COLUMNS:
                continue  # (optional: unknown)
            return None
        col = table.column(name)
        if not _same_type(col.type, kind):
            return None
        cols[name] = col.combine_chunks()
    rows = table.num_rows
    required = ("topic", "partition", "replicas", "dirs", "isr", "size")
    if any(cols[c].null_count for c in required):
        return None
    if rows and (pc.min(cols["partition"]).as_py() < 0 or pc.min(cols["size"]).as_py() < 0):
        return None

    # brokers by index in id order, each id's own object
    ordered = sorted(brokers, key=lambda b: b.id)
    ids = np.array([b.id for b in ordered], dtype=np.int64)
    id_objs = np.array([b.id for b in ordered], dtype=object)

    values, counts = _lists(cols["replicas"])
    at = _index(ids, values)
    if at is None or (rows and counts.min() < 1):
        return None
    row_of = np.repeat(np.arange(rows, dtype=np.int64), counts)
    pairs = np.sort(row_of * len(ids) + at)  # (row, broker index) of each replica
    if len(pairs) > 1 and not np.diff(pairs).all():
        return None  # a broker twice in a partition

    dirs_col = cols["dirs"]
    if not np.array_equal(_counts(dirs_col), counts):
        return None
    dir_objs = _dirs(pc.list_flatten(dirs_col), at, brokers, ids)
    if dir_objs is None:
        return None

    leaders = cols["leader"]
    named = pc.fill_null(pc.not_equal(leaders, -1), False).to_numpy(zero_copy_only=False)
    lead_rows = np.flatnonzero(named)
    lead_at = _index(ids, leaders.filter(pa.array(named)).to_numpy(zero_copy_only=False).astype(np.int64))
    if lead_at is None or not _among(lead_rows * len(ids) + lead_at, pairs):
        return None  # a leader not a replica

    isr_values, isr_counts = _lists(cols["isr"])
    isr_at = _index(ids, isr_values)
    if isr_at is None:
        return None
    isr_rows = np.repeat(np.arange(rows, dtype=np.int64), isr_counts)
    if not _among(isr_rows * len(ids) + isr_at, pairs):
        return None  # an in-sync replica not a replica

    extras = [cols.get(c) for c in TRAFFIC_COLUMNS]
    rate, fanout, untiered = extras
    if rate is not None and rate.null_count < rows:
        known = rate.drop_null().to_numpy()
        if not (np.isfinite(known).all() and (known >= 0).all()):
            return None
    for extra in (fanout, untiered):
        if extra is not None and extra.null_count < rows and pc.min(extra).as_py() < 0:
            return None

    topics = _topics(cols["topic"])
    if topics is None:
        return None
    numbers = cols["partition"].to_pylist()
    if len(set(zip(topics, numbers, strict=True))) != rows:
        return None  # a partition twice

    # (numpy object arrays pick the objects: no integer is made per replica for its index)
    reps = _tuples(id_objs[at].tolist(), counts)
    isrs = _tuples(id_objs[isr_at].tolist(), isr_counts)
    dir_tuples = _tuples(dir_objs, counts)
    leader_objs = np.full(rows, None, dtype=object)
    leader_objs[lead_rows] = id_objs[lead_at]
    sizes = cols["size"].to_pylist()
    nothing = [None] * rows
    rates, fanouts, tails = (nothing if c is None else c.to_pylist() for c in extras)
    return tuple(
        PartitionState(t, n, rs, ds, lead_b, rs if i == rs else i, s, rate_v, fan, tail)
        for t, n, rs, ds, lead_b, i, s, rate_v, fan, tail in zip(
            topics,
            numbers,
            reps,
            dir_tuples,
            leader_objs.tolist(),
            isrs,
            sizes,
            rates,
            fanouts,
            tails,
            strict=True,
        )
    )


def _same_type(found: Any, kind: Any) -> bool:
    """``found`` is ``kind`` (a list's item may be named otherwise: Parquet names it ``element``)."""
    import pyarrow as pa

    if pa.types.is_list(kind):
        return bool(pa.types.is_list(found) and found.value_type == kind.value_type)
    return bool(found == kind)


def _lists(col: Any) -> tuple[Any, Any]:
    """A list column without null lists: its values (int64) and each row's count; (None, None) when a
    value is null."""
    import numpy as np
    import pyarrow.compute as pc

    values = pc.list_flatten(col)
    if values.null_count:
        return None, None
    return values.to_numpy(zero_copy_only=False).astype(np.int64), _counts(col)


def _counts(col: Any) -> Any:
    """Each row's count of a list column without null lists."""
    import numpy as np
    import pyarrow.compute as pc

    return pc.list_value_length(col).to_numpy(zero_copy_only=False).astype(np.int64)


def _index(ids: Any, values: Any) -> Any:
    """Each broker id of ``values`` as its index in ``ids`` (sorted); None when one is not there."""
    import numpy as np

    if values is None:
        return None
    at = np.searchsorted(ids, values)
    if len(values) and (not len(ids) or at.max() >= len(ids) or not np.array_equal(ids[at], values)):
        return None
    return at


def _among(keys: Any, sorted_keys: Any) -> bool:
    """Every one of ``keys`` is in ``sorted_keys`` (ascending): a binary search each (numpy's ``isin``
    hashes, slower at millions)."""
    import numpy as np

    if not len(keys):
        return True
    if not len(sorted_keys):
        return False
    at = np.minimum(np.searchsorted(sorted_keys, keys), len(sorted_keys) - 1)
    return bool(np.array_equal(sorted_keys[at], keys))


def _dirs(values: Any, at: Any, brokers: Sequence[Broker], ids: Any) -> list[str | None] | None:
    """Each replica's dir (``values``, the flattened dirs; ``at``, each replica's broker index), one
    object per path; None for a null or ``any``; None for them all when a dir is not its broker's."""
    import numpy as np
    import pyarrow.compute as pc

    encoded = pc.dictionary_encode(values)
    names: list[str | None] = encoded.dictionary.to_pylist()
    codes = pc.fill_null(encoded.indices, -1).to_numpy(zero_copy_only=False).astype(np.int64)
    code_of = {name: k for k, name in enumerate(names)}
    width = len(names) + 1
    index = {b: i for i, b in enumerate(ids.tolist())}
    allowed = [
        index[b.id] * width + k for b in brokers for d in b.dir_paths if (k := code_of.get(d)) is not None
    ]
    any_code = code_of.get(ANY, -1)
    named = codes >= 0
    if any_code >= 0:
        named &= codes != any_code
        names[any_code] = None
    if not _among((at * width + codes)[named], np.sort(np.array(allowed, dtype=np.int64))):
        return None
    names.append(None)  # (code -1: null)
    return list(np.array(names, dtype=object)[codes].tolist())


def _topics(col: Any) -> list[str] | None:
    """The topic of each row, one object per name; None when a name is not a legal Kafka topic."""
    import numpy as np
    import pyarrow.compute as pc

    encoded = pc.dictionary_encode(col)
    names = encoded.dictionary.to_pylist()
    if not all(legal_topic(t) for t in names):
        return None
    return list(np.array(names, dtype=object)[encoded.indices.to_numpy()].tolist())


def _tuples(flat: list[Any], counts: Any) -> list[tuple[Any, ...]]:
    """``flat`` cut into consecutive tuples of ``counts`` items."""
    out = []
    start = 0
    for n in counts.tolist():
        end = start + n
        out.append(tuple(flat[start:end]))
        start = end
    return out


__all__ = ["partitions"]
