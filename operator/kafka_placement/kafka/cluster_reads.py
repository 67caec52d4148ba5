"""DescribeCluster of the gateway: which brokers are alive, by the one liveness rule (kafka/liveness.py).

Asked through kafka-python only, spaced tries to the least loaded broker it reaches, within a time budget
(``ClusterReads._describe_cluster_anywhere``); an answer listing no live broker is no verdict on liveness.
``KafkaGateway`` adds the rest of the admin API.
"""

from __future__ import annotations

import time

from .clients import KafkaClients
from .liveness import ClusterBrokers, DescribedCluster
from .types import KafkaAuthenticationError, KafkaOperationError, KafkaUnavailableError

DESCRIBE_CLUSTER_TRIES = 10  # kafka-python's DescribeCluster, each to the least loaded broker not in backoff
DESCRIBE_CLUSTER_PAUSE_S = 0.02  # before the second try, doubled before each next up to the most below
DESCRIBE_CLUSTER_PAUSE_MAX_S = 0.5  # (2.6 s of pauses in all at most)
DESCRIBE_CLUSTER_BUDGET_S = 20.0  # no try starts this long after the first (hung: 6 tries held 73 s)


class ClusterReads(KafkaClients):
    """The DescribeCluster calls, on the gateway's clients."""

    def _describe_cluster(self, what: str) -> DescribedCluster:
        """DescribeCluster, through kafka-python only (``_describe_cluster_anywhere``: the least loaded
        broker it reaches; its answer carries the authorized operations and the fenced brokers too).
        Never through librdkafka: its DescribeCluster aborts the whole process (``Assertion 'rko_result'
        failed``, librdkafka 2.16) when the answer lists no broker, as a KRaft broker's does while every
        broker is fenced (a cluster starting, or restarting as a whole): its metadata parser says "retry"
        and the DescribeCluster parser drops that error and asserts on the missing result (shown by
        tests/unit/kafka/test_empty_metadata.py). An answer that lists no live broker is no verdict on
        liveness: ``KafkaUnavailableError`` (the cluster is not serving yet), never "every broker dead".
        When kafka-python reaches no broker, librdkafka's connect check says why (authentication, TLS,
        unreachable) before the generic error."""
        answer = self._describe_cluster_anywhere(what)
        if answer is not None:
            brokers = answer.brokers
            if brokers.live:
                return answer
            fenced = brokers.fenced
            listed = f"only fenced brokers ({', '.join(map(str, fenced))})" if fenced else "no broker"
            raise self._unavailable(
                f"{what}: the cluster answered but lists {listed}: no broker serves yet (a cluster starting, "
                "or every broker fenced); liveness is not judged on such an answer"
            )
        self._admin()  # raises what librdkafka's connect says when it cannot connect either
        raise self._unavailable(f"{what}: no broker answered DescribeCluster")

    def _describe_cluster_anywhere(self, what: str) -> DescribedCluster | None:
        """DescribeCluster through kafka-python, which sends it to the least loaded broker it reaches, not to
        the "controller" the metadata names (KRaft names any live broker), which this operator may not reach
        (a broker just dead; a network that cuts it off from one broker must not fail every reconcile, nor
        make a live broker look dead). A broker that refuses a try is in reconnect backoff for the next, which
        kafka-python sends elsewhere, while that backoff lasts: it starts at 50 ms (+-20%), so the first pause
        is shorter (pauses of 100 ms and more let it lapse: a third of the tries after a refusal went back to
        the refusing broker), and the pauses grow for brokers that come back (a fresh gateway right after a
        broker was killed tried it four times without pauses: the proof run at c9417dc). A client that could
        not bootstrap is made again. An answer listing no live broker (the broker that gave it is starting) is
        asked of another broker too. None: no broker answered; otherwise the first answer with a live broker,
        or the last one. No try starts ``DESCRIBE_CLUSTER_BUDGET_S`` after the first (a hung broker holds each
        for the request timeout)."""
        answer: DescribedCluster | None = None
        started = time.monotonic()
        for attempt in range(DESCRIBE_CLUSTER_TRIES):
            if attempt:
                if time.monotonic() - started >= DESCRIBE_CLUSTER_BUDGET_S:
                    break
                time.sleep(min(DESCRIBE_CLUSTER_PAUSE_S * 2 ** (attempt - 1), DESCRIBE_CLUSTER_PAUSE_MAX_S))
            try:
                py = self._py()
                answer = DescribedCluster.of(self._call(what, py.describe_cluster, attempts=1))
            except KafkaAuthenticationError:
                raise  # refused who we are: trying again does not help
            except (KafkaOperationError, KafkaUnavailableError):
                continue
            if answer.brokers.live:
                return answer
        return answer

    def cluster_brokers(self) -> ClusterBrokers:
        """The brokers alive in the cluster (and fenced ones, where the answer lists them), by the one
        liveness rule (kafka/liveness.py): one small request, whatever the cluster's size."""
        return self._describe_cluster("describe cluster").brokers

    def describe_cluster(self) -> tuple[str | None, tuple[int, ...]]:
        """(cluster id, live broker ids) by the liveness rule of ``cluster_brokers`` (an execution's tick
        decides liveness with it, as a full read does)."""
        cluster = self.cluster_brokers()
        return cluster.cluster_id, cluster.live

    def broker_ids(self) -> tuple[int, ...]:
        return self.describe_cluster()[1]
