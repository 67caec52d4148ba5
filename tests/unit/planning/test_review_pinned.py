"""The plan's report and its review ConfigMap are pinned: for small varied plans (review_cases.py), what
``report.build_report`` returns and what ``plan_review.review_data`` writes equal, as text, the files the
report code wrote before it was made fast for a million partitions (tests/unit/planning/reviews/), with
and without the planner's tally. Regenerated twice since, on purpose: the page's summary in words and
units and the copy model's estimate (only ``report.html``, by its digest now, and ``estimate.json``
changed; every other key and the report itself were compared equal first); then the page for a person
(every balance row and rule in words, bytes in units in the tables: only ``report.html`` changed); then
the scale-out case alone, whose plan changed (dir balance with exact dirs: a cheaper plan, golden too);
then ``brokersChanging`` alone, in binary units as every other text for people (model/units.py)."""

from __future__ import annotations

import pytest
from tests.unit.planning.review_cases import CASES, REVIEWS, pinned, text_of


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_report_and_its_review_configmap_are_the_pinned_ones(name: str) -> None:
    assert text_of(pinned(CASES[name]())) == (REVIEWS / f"{name}.json").read_text()
