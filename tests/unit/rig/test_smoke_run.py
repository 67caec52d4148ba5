"""The compatibility smoke's command runner (tests/compat/smoke.py ``run``): a command that ends is
judged by its exit and output; one whose wait will not end (``stop_when``: on Kafka 3.7 and 3.8 an
execution waiting on a copy Kafka lost the swap of) is interrupted as Ctrl-C would, at once rather than
at its timeout, and so is one that runs out of its time. No rig: small Python children."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from tests.compat import smoke

# a child that says when Ctrl-C reached it, as the CLI does ("interrupted"), and otherwise sleeps; once
# it is ready to say so it creates the file named by its argument
SLEEPER = (
    "import pathlib, sys, time\n"
    "try:\n"
    "    pathlib.Path(sys.argv[1]).touch()\n"
    "    time.sleep(60)\n"
    "except KeyboardInterrupt:\n"
    "    print('interrupted', file=sys.stderr)\n"
    "    sys.exit(130)\n"
)


def test_a_command_that_ends_is_judged_by_its_exit() -> None:
    ok = smoke.run([sys.executable, "-c", "print('done')"], timeout=30)
    assert ok.returncode == 0 and ok.stdout.strip() == "done"
    with pytest.raises(smoke.Failed, match="exited 3"):
        smoke.run([sys.executable, "-c", "import sys; sys.exit(3)"], timeout=30)


def test_a_wait_that_will_not_end_is_interrupted_once_stop_when_says_so(tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    asked: list[bool] = []

    def stop() -> bool:
        asked.append(ready.exists())  # what the lost-swap check reads: a file the child writes
        return asked[-1]

    with pytest.raises(smoke.Failed) as failed:
        smoke.run([sys.executable, "-c", SLEEPER, str(ready)], timeout=50, stop_when=stop)
    # stopped the first time it was told so, not run out at its timeout (that failure says "did not end
    # within"), and interrupted as Ctrl-C would
    assert "was stopped" in str(failed.value) and "interrupted" in str(failed.value), failed.value
    assert asked[-1] and not any(asked[:-1])


def test_a_command_out_of_time_is_interrupted_and_named(tmp_path: Path) -> None:
    with pytest.raises(smoke.Failed) as failed:
        smoke.run([sys.executable, "-c", SLEEPER, str(tmp_path / "ready")], timeout=1.5)
    assert "did not end within 2s" in str(failed.value), failed.value


def test_the_record_names_a_lost_swap_only_in_its_last_error(tmp_path: Path) -> None:
    state = tmp_path / "state.json"
    assert not smoke._names_lost_swap(state)  # not written yet
    state.write_text("{")  # read mid-write
    assert not smoke._names_lost_swap(state)
    state.write_text(json.dumps({"lastError": None}))
    assert not smoke._names_lost_swap(state)
    said = f"broker 1: a copy of t-0 {smoke.LOST_SWAP} for 60s or more"
    state.write_text(json.dumps({"lastError": said}))
    assert smoke._names_lost_swap(state)
