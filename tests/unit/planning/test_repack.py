"""The exact search's sets of kept replicas to move out of the way (planning/repack.py ``release_sets``):
the heap gives exactly the first sets of all of them sorted, ties and same-partition pairs included."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_placement.planning.repack import release_sets


def every_set(kept: list[tuple[int, tuple[str, int], int]], limit: int) -> list[object]:
    """What the search tried before the heap: every set built, sorted, the first ``limit`` taken."""
    sets: list[object] = [(0, ())]
    sets += [(s, ((k, b),)) for s, k, b in kept]
    sets += [
        (kept[i][0] + kept[j][0], ((kept[i][1], kept[i][2]), (kept[j][1], kept[j][2])))
        for i in range(len(kept))
        for j in range(i + 1, min(len(kept), i + 1 + limit))
        if kept[i][1] != kept[j][1]
    ]
    return sorted(sets)[:limit]  # type: ignore[type-var]


kept_lists = st.lists(
    st.tuples(st.integers(0, 6), st.tuples(st.sampled_from("abc"), st.integers(0, 4)), st.integers(1, 5)),
    max_size=40,
    unique_by=lambda r: (r[1], r[2]),
).map(sorted)


@settings(max_examples=300, deadline=None)
@given(kept=kept_lists, limit=st.integers(1, 60))
def test_release_sets_are_the_first_of_every_set_sorted(
    kept: list[tuple[int, tuple[str, int], int]], limit: int
) -> None:
    assert release_sets(kept, limit) == every_set(kept, limit)
    assert (
        release_sets(kept, limit, pairs=False)
        == sorted([(0, ()), *((s, ((k, b),)) for s, k, b in kept)])[:limit]
    )


def test_a_large_repair_gets_the_same_cheapest_sets() -> None:
    rng = random.Random(7)
    kept = sorted(
        (rng.randrange(1, 50) * 10**6, ("t", p), b) for p in range(300) for b in rng.sample(range(1, 30), 3)
    )
    got = release_sets(kept, 2000)
    assert got == every_set(kept, 2000) and len(got) == 2000
    assert [c for c, _ in got] == sorted(c for c, _ in got) and got[0] == (0, ())
