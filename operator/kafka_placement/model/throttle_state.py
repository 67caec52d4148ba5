"""The replication throttles an execution owns: the one model ``kafka/throttles.py`` sets, clears and
checks, and the execution record (``throttles``, execution/record.py) persists as is.

Per broker config: the previous dynamic value (None = unset, deleted again on clear) and the value set
(None in records written before it was kept). Per topic config: the ``partition:broker`` entries this
tool appended to its ``*.throttled.replicas`` (only those are removed on clear). Frozen: a change is a new
state, so one the record holds is never altered behind its back.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class BrokerThrottle(_Frozen):
    broker: int = Field(ge=0, le=2**31 - 1)
    config: str = Field(max_length=1000)  # a throttle claim's name holds its owner and previous values
    previous: str | None = None
    value: str | None = None


class TopicThrottle(_Frozen):
    topic: str = Field(max_length=249)
    config: str = Field(max_length=200)
    entries: tuple[str, ...]


class ThrottleState(_Frozen):
    brokers: tuple[BrokerThrottle, ...] = ()
    topics: tuple[TopicThrottle, ...] = ()

    @property
    def empty(self) -> bool:
        """Nothing of ours set (or nothing left to remove)."""
        return not self.brokers and not self.topics


class ClaimOwner(_Frozen):
    """The KafkaCluster resource whose execution set a broker's throttles: written to the broker itself
    beside them (a throttle claim, kafka/throttle_claims.py), so that they are recognised and removed
    when the resource is gone without having removed them (its namespace deleted while no operator ran)."""

    namespace: str = Field(pattern=r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")  # a DNS label
    name: str = Field(pattern=r"^[a-z0-9]([-.a-z0-9]{0,251}[a-z0-9])?$")  # a DNS subdomain
    uid: str = Field(pattern=r"^[A-Za-z0-9-]{1,64}$")
