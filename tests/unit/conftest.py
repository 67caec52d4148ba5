"""What every unit test shares: Hypothesis judges a property by its examples' outcomes, never by their
wall time. Its defaults fail an example that runs over 200 ms (``deadline``) or data drawn slowly
(``HealthCheck.too_slow``): on this project's 2 cores, with the unit tests' workers, lint and the rig's
build side by side, a microsecond property can stall that long and fail a run for no fault of the code
(one property still had both). Loaded before the test modules, so every ``@settings`` starts from it."""

from __future__ import annotations

from hypothesis import HealthCheck, settings

settings.register_profile("kafka-placement", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("kafka-placement")
