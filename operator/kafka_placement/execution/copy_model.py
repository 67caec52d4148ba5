"""How long an execution takes, before it starts: the executor's own admission rules followed over time.

``estimate(plan, limits, tick_s)`` replays what ``executor.tick`` does with a plan (execution/executor.py):
at each tick the moves whose copies ended are done, and new ones are admitted in execution order within
the limits (moves per broker and per cluster, bytes in flight into and out of each broker; a broker with
nothing in flight always takes one), scanning as many candidates as a tick reads. Between ticks every
copy runs: a new replica copies its partition's bytes from the leader (into the follower at the
follower-side throttle, out of the leader at the leader-side one), a move between two dirs of a broker at
that broker's log-dir throttle; the moves sharing a broker's side share its rate equally. The rate is the
move's own throttle (a rule's), else the execution's, else ``ASSUMED_UNTHROTTLED_RATE`` (an unthrottled
broker copies as fast as its disks and network let it: the figure is then a guess, and says so). Kafka's
brokers replicate below their configured rate (0.75-0.88 of it, measured on the project's rig): with the
rate hold on (``holdAchievedRate``, execution/rate_watch.py) they achieve the throttle, without it the
model counts ``UNHELD_SHARE`` of it. A broker side with a throttle of its own below the execution's (the
adaptive throttle's current value, execution/adaptive.py) copies at that one.

Ticks and Kafka's own work are what make many small moves slow: a move is seen done, and its room given
to the next, only at a tick; and each move costs Kafka work whatever its bytes (the controller commits the
new replicas, the brokers create and catch up their logs, the controller completes the reassignment and
the old logs are deleted), work the cluster does about one move at a time: ``seconds_per_move`` of it per
move, shared by the moves in flight: ``DEFAULT_SECONDS_PER_MOVE`` until an execution of many small moves on
the cluster measured it (``kafka_time_per_move``, kept in the KafkaCluster's ``status.kafkaWork``). The
execution's first ticks validate the plan and set its
throttles, and its last confirms the partitions and removes them (``START_TICKS``, ``END_TICKS``).

The replay is exact for the model, in time proportional to the moves times the moves in flight (about a
second for 30,000 moves). A plan of more than ``MAX_REPLAY_MOVES`` moves, or one whose replay passes
``MAX_WORK`` stream-steps, gets the bound instead: the busiest broker's bytes over its rate, or the
admission rounds its move counts need, or the moves times Kafka's work per move, whichever is longer
(``exact`` False; on random plans of 20,000 and 100,000 small moves, replayed for comparison, the bytes
and rounds agreed: the admission rounds set the pace).
Pure: no clock, no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..model.plan import Plan
from ..model.self_healing import format_time
from ..model.snapshot import ClusterSnapshot
from .lookahead import LOOKAHEAD, MIN_LOOKAHEAD  # candidates a tick scans: the executor's own numbers
from .record import ExecutionPlan, Original
from .record_doc import ASSUMED_UNTHROTTLED_RATE, Limits, Rule

START_TICKS = 2  # validation (a full read), then the first submission with its throttles
END_TICKS = 1  # the completion's confirming read and the throttles' removal
Resource = tuple[str, int]  # ("in" | "out" | "dir", broker): what a copy stream loads
UNHELD_SHARE = 0.82  # of the throttle a broker achieves without the rate hold (0.75-0.88 measured)
MAX_WORK = 3_000_000  # stream-steps the replay may take before it gives the bound instead
MAX_REPLAY_MOVES = 50_000  # larger plans get the bound at once (the replay costs ~30 us a move)
# Kafka's own work per partition move whatever its bytes, done about one move at a time by the cluster
# (module docstring): on the project's 3-node rig (Kafka 4.4, idle) 2,000 moves of 600-byte partitions
# took 5.5 ms each and 6,000 took 10.5 ms each, on a loaded 5-node rig 20,000 took 19-23 ms each
# (docs/benchmarks.md, "Many small moves": it varies with the cluster and its load): a cluster's own
# executions of many small moves replace it (``kafka_time_per_move``)
DEFAULT_SECONDS_PER_MOVE = 0.008
MIN_MEASURED_MOVES = 200  # fewer moves measure Kafka's work per move too roughly to replace the figure
PER_MOVE_RANGE = (0.0005, 1.0)  # seconds: what a measure is clamped to


@dataclass(frozen=True, slots=True)
class CopyEstimate:
    """How long an execution of a plan takes by the copy model (module docstring)."""

    seconds: float  # from the execution's start to its end, its first and last ticks included
    copy_seconds: float  # the moves alone, from the first submission to the last move seen done
    bound_seconds: float  # the busiest broker's bytes over its rate: no execution can be faster
    bytes: int  # bytes copied (each new replica and each dir move counted)
    moves: int  # partition moves
    bytes_per_second: int  # the rate per broker and side the model assumed (what the throttle achieves)
    throttled: bool  # False: the rate is ASSUMED_UNTHROTTLED_RATE, a guess
    tick_seconds: float
    busiest_broker: int | None  # the broker whose copy in, out or between its dirs takes longest at its rate
    exact: bool  # False: the plan was too large to replay; seconds is the bound (module docstring)
    seconds_per_move: float = DEFAULT_SECONDS_PER_MOVE  # Kafka's own work per move (module docstring)
    measured_per_move: bool = False  # True: seconds_per_move measured on the cluster (status.kafkaWork)


def estimate_json(est: CopyEstimate, finish_at: float | None) -> dict[str, Any]:
    """``estimate.json``: the copy model's estimate of the execution (below) and, when
    it ends within ten years, when it would end if started when the plan was made (windows counted)."""
    out: dict[str, Any] = {
        "seconds": round(est.seconds),
        "copySeconds": est.copy_seconds,
        "boundSeconds": est.bound_seconds,
        "bytes": est.bytes,
        "moves": est.moves,
        "bytesPerSecond": est.bytes_per_second,
        "throttled": est.throttled,
        "tickSeconds": est.tick_seconds,
        "busiestBroker": est.busiest_broker,
        "exact": est.exact,
        "microsecondsPerMove": round(est.seconds_per_move * 1_000_000),
        "perMoveMeasured": est.measured_per_move,
    }
    if finish_at is not None:
        out["finishAt"] = format_time(finish_at)
    return out


def baseline_of(snapshot: ClusterSnapshot, plan: Plan) -> tuple[list[Original], dict[int, int]]:
    """The plan's partitions as ``snapshot`` shows them (replicas, dirs, bytes a move copies, in-sync
    replicas) and their leaders, by plan index: what the execution would find if it started now. A plan
    partition missing from the snapshot counts as empty (the execution would refuse the plan)."""
    originals: list[Original] = []
    leaders: dict[int, int] = {}
    for i, t in enumerate(plan.partitions):
        p = snapshot.partition(t.topic, t.partition)
        if p is None:
            originals.append(Original(t.replicas, (None,) * len(t.replicas), 0))
            continue
        originals.append(Original(p.replicas, p.log_dirs, p.copy_bytes, len(set(p.isr) & set(p.replicas))))
        if p.leader is not None:
            leaders[i] = p.leader
    return originals, leaders


def estimate_plan(
    snapshot: ClusterSnapshot,
    plan: Plan,
    limits: Limits,
    tick_s: float,
    rules: Sequence[Rule] = (),
    side_rates: Mapping[Resource, int] | None = None,
    per_move: float | None = None,
) -> CopyEstimate:
    """``estimate`` of ``plan`` as if executed now from ``snapshot`` (``rules``: the intents' throttles
    and priorities, as the execution would get them; ``side_rates`` and ``per_move``: as ``estimate``'s)."""
    baseline, leaders = baseline_of(snapshot, plan)
    return estimate(ExecutionPlan(plan, baseline, rules), limits, tick_s, leaders, side_rates, per_move)


def estimate(
    plan: ExecutionPlan,
    limits: Limits,
    tick_s: float,
    leaders: Mapping[int, int] | None = None,
    side_rates: Mapping[Resource, int] | None = None,
    per_move: float | None = None,
) -> CopyEstimate:
    """The copy model's duration of ``plan`` (with its baseline) under ``limits``, ticking every ``tick_s``
    seconds; ``leaders``: each plan index's leader (absent: its first replica); ``side_rates``: a
    broker's own throttle into it (``("in", broker)``) or out of it (``("out", broker)``) where it is
    below the execution's (the adaptive throttle at its current value, execution/adaptive.py);
    ``per_move``: Kafka's work per move measured on the cluster (None: ``DEFAULT_SECONDS_PER_MOVE``)."""
    tick_s = max(float(tick_s), 0.001)
    kafka_s = DEFAULT_SECONDS_PER_MOVE if per_move is None else max(float(per_move), 0.0)
    share = 1.0 if limits.hold_rate else UNHELD_SHARE
    rate = round(limits.throttle * share) if limits.throttle else ASSUMED_UNTHROTTLED_RATE
    own = {x: min(rate, max(round(v * share), 1)) for x, v in (side_rates or {}).items()}
    lead = leaders or {}
    n = len(plan.targets)
    # per move: its streams (resources it loads: ("in"|"out"|"dir", broker)), bytes each copies
    streams: list[tuple[tuple[tuple[str, int], ...], ...]] = []
    load: dict[tuple[str, int], int] = {}
    total = 0
    for i in range(n):
        size = plan.baseline_size(i)
        leader = lead.get(i, plan.original(i).replicas[0] if plan.original(i).replicas else -1)
        mine: list[tuple[tuple[str, int], ...]] = []
        for a in plan.adding[i]:
            mine.append((("in", a), ("out", leader)))
        for d in plan.dir_moving[i]:
            mine.append((("dir", d),))
        streams.append(tuple(mine))
        for s in mine:
            total += size
            for r in s:
                load[r] = load.get(r, 0) + size
    busiest, bound = max(
        ((x, b / own.get(x, rate)) for x, b in load.items()),
        key=lambda kv: (kv[1], -kv[0][1]),
        default=(None, 0.0),
    )
    moves = sum(1 for i in range(n) if plan.involved(i) or plan.removing[i])
    copy_s = (
        _replay(plan, limits, tick_s, rate, share, streams, lead, own, kafka_s)
        if moves <= MAX_REPLAY_MOVES
        else None
    )
    exact = copy_s is not None
    if copy_s is None:
        copy_s = max(bound, _rounds(plan, limits) * tick_s, moves * kafka_s)
    overhead = (START_TICKS + END_TICKS) * tick_s if n else 0.0
    return CopyEstimate(
        seconds=round(copy_s + overhead, 1),
        copy_seconds=round(copy_s, 1),
        bound_seconds=round(bound, 1),
        bytes=total,
        moves=moves,
        bytes_per_second=rate,
        throttled=limits.throttle is not None,
        tick_seconds=tick_s,
        busiest_broker=busiest[1] if busiest is not None else None,
        exact=exact,
        seconds_per_move=kafka_s,
        measured_per_move=per_move is not None,
    )


def _rounds(plan: ExecutionPlan, limits: Limits) -> int:
    """Admission rounds the move counts need at least: the busiest broker's moves over its limit, all
    moves over the cluster's."""
    per: dict[int, int] = {}
    for i in range(len(plan.targets)):
        for b in plan.involved(i):
            per[b] = per.get(b, 0) + 1
    busiest = max(per.values(), default=0)
    return max(
        math.ceil(busiest / limits.max_moves_per_broker), math.ceil(len(plan.targets) / limits.max_moves)
    )


def _replay(
    plan: ExecutionPlan,
    limits: Limits,
    tick_s: float,
    rate: int,
    share: float,
    streams: list[tuple[tuple[tuple[str, int], ...], ...]],
    leaders: Mapping[int, int],
    own_rates: Mapping[Resource, int],
    kafka_s: float,
) -> float | None:
    """Seconds from the first submission to the last move seen done (module docstring); None: over
    ``MAX_WORK``. Kafka's work (``kafka_s`` per move) is one more stream of each move, on a resource of
    one second per second that the moves in flight share."""
    cap = limits.bytes_per_broker
    queue = [i for i in plan.order if plan.involved(i) or plan.removing[i]]
    pos = 0
    held: list[int] = []  # scanned and not admitted: first in line at the next tick
    active: dict[int, list[float]] = {}  # move -> bytes left per stream
    count: dict[int, int] = {}
    inbound: dict[int, int] = {}
    outbound: dict[int, int] = {}
    users: dict[tuple[str, int], int] = {}  # streams still copying per resource
    kafka: dict[int, float] = {}  # move -> Kafka's work left (seconds of the cluster's)
    now, work = 0.0, 0

    def leader(i: int) -> int:
        o = plan.original(i)
        return leaders.get(i, o.replicas[0] if o.replicas else -1)

    def charge(i: int, sign: int) -> None:
        size = plan.baseline_size(i)
        for b in plan.involved(i):
            count[b] = count.get(b, 0) + sign
        for b in plan.adding[i] + plan.dir_moving[i]:
            inbound[b] = inbound.get(b, 0) + sign * size
        if plan.adding[i]:
            b = leader(i)
            outbound[b] = outbound.get(b, 0) + sign * size * len(plan.adding[i])

    def fits(i: int) -> bool:
        if any(count.get(b, 0) >= limits.max_moves_per_broker for b in plan.involved(i)):
            return False
        size = plan.baseline_size(i)
        if any(inbound.get(b, 0) and inbound[b] + size > cap for b in plan.adding[i] + plan.dir_moving[i]):
            return False
        b = leader(i)
        out = size * len(plan.adding[i])
        return not (plan.adding[i] and outbound.get(b, 0) and outbound[b] + out > cap)

    while pos < len(queue) or held or active:
        # admit, as a tick does: in order, within the limits, scanning LOOKAHEAD x the room
        room = limits.max_moves - len(active)
        if room > 0:
            scan = max(LOOKAHEAD * room, MIN_LOOKAHEAD)
            fresh = queue[pos : pos + max(scan - len(held), 0)]
            pos += len(fresh)
            kept: list[int] = []
            for i in held + fresh:
                if room > 0 and fits(i):
                    charge(i, 1)
                    size = float(plan.baseline_size(i))
                    active[i] = [size] * len(streams[i])
                    if kafka_s > 0:
                        kafka[i] = kafka_s
                    for s in streams[i]:
                        for x in s:
                            users[x] = users.get(x, 0) + 1
                    room -= 1
                else:
                    kept.append(i)
            held = kept
        # copy until the next tick at which a stream has ended (rates are constant in between)
        speeds: dict[int, list[float]] = {}
        first = waiting = math.inf  # waiting: the least Kafka work of a move that copies nothing more
        for i, left in active.items():
            ruled = plan.rate[i]  # a rule's throttle
            own = ruled * share if ruled else rate
            v: list[float] = []
            copying = False
            for s, b in zip(streams[i], left, strict=True):
                if b <= 0:
                    v.append(0.0)
                    continue
                r = min([own] + [own_rates.get(x, rate) / users[x] for x in s])
                v.append(r)
                first = min(first, b / r)
                copying = True
            speeds[i] = v
            work += len(v) + 1
            if not copying:  # (nothing to copy, or no more: a replica removed, an order changed)
                w = kafka.get(i)
                if w is None:
                    first = 0.0  # done at the next tick
                elif w < waiting:
                    waiting = w
        # Kafka's work ends a step only for a move that copies nothing more (the others' ends with their
        # copies; the share of a step in which another's work ended is not given back: a little slower)
        kafka_rate = 1.0 / len(kafka) if kafka else 0.0
        if waiting < math.inf:
            first = min(first, waiting / kafka_rate)
        if work > MAX_WORK:
            return None
        steps = 1 if first == math.inf else max(1, math.ceil(first / tick_s - 1e-6))
        dt = steps * tick_s
        now += dt
        done: list[int] = []
        for i, left in active.items():
            for k, r in enumerate(speeds[i]):
                if left[k] > 0:
                    left[k] -= r * dt
                    if left[k] <= 1e-6 * max(1.0, r * dt):
                        left[k] = 0.0
                        for x in streams[i][k]:
                            users[x] -= 1
            if i in kafka:
                kafka[i] -= kafka_rate * dt
                if kafka[i] <= 1e-9:
                    del kafka[i]
            if all(b <= 0 for b in left) and i not in kafka:
                done.append(i)
        for i in done:
            del active[i]
            charge(i, -1)
        if not active and not done and not held and pos >= len(queue):
            break
    return now


def kafka_time_per_move(
    estimated_s: float, actual_s: float, moves: int, used_s: float, bound_s: float
) -> float | None:
    """Kafka's work per move that an execution showed, from its estimate (``estimated_s``, made with
    ``used_s`` a move, its bytes' bound ``bound_s``) and the time it ran (``actual_s``): the figure with
    which the estimate would have read the actual time, ``used_s`` plus the error spread over the moves
    (the replay's time grows by about the moves times each second added a move where that work sets the
    pace). None where it measures nothing: fewer than ``MIN_MEASURED_MOVES`` moves, or the bytes set the
    pace (their bound above the work the estimate counted: its error is the rate's, not Kafka's).
    Clamped to ``PER_MOVE_RANGE``."""
    if moves < MIN_MEASURED_MOVES or estimated_s <= 0 or actual_s <= 0 or moves * used_s < bound_s:
        return None
    low, high = PER_MOVE_RANGE
    return min(max(used_s + (actual_s - estimated_s) / moves, low), high)
