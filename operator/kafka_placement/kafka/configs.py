"""Config calls of the gateway: DescribeConfigs and IncrementalAlterConfigs of brokers and topics, in
bounded batches (librdkafka takes one broker resource per request; topics go together, up to
``TOPICS_PER_CONFIG_REQUEST`` a request), and each topic's effective ``min.insync.replicas``. A broker's
own configs are read and set through that broker: callers leave out brokers that do not answer
(``KafkaGateway.silent``).

Topics' configs can be read from any broker, but librdkafka sends a request of topics alone to the broker
its metadata names "controller" — in KRaft a random live broker, which may be one this operator cannot
reach: every such read then waited out its timeout three times (a snapshot listed a cut-off broker two
minutes late, and the executor's min-ISR gate stalled). A request that holds one broker resource goes to
that broker instead, so a topic batch carries the resource of a broker that has just answered
(``_config_route``; its answer is dropped), and a route that fails is not used again
(``_route_failed``): the next attempt takes another, or the controller (once the metadata names one that
accepts connections, ``_controller_admin``, as for a change of topics' configs, which carries no route).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from . import access, failures
from .clients import KafkaClients
from .types import ConfigChange, ConfigTarget, ConfigValue, KafkaAuthorizationError, OpError

TOPICS_PER_CONFIG_REQUEST = 1000  # DescribeConfigs: topics per request (each returns all its ~40 configs)


class KafkaConfigs(KafkaClients):
    """The config calls, on the gateway's clients (``KafkaGateway`` adds the rest of the admin API)."""

    # ---- configs -------------------------------------------------------------------------------

    def describe_configs(self, targets: Iterable[ConfigTarget]) -> dict[ConfigTarget, dict[str, ConfigValue]]:
        """All config entries of brokers and topics (one request per broker, topics together)."""
        from confluent_kafka.admin import ConfigResource, ConfigSource  # type: ignore[attr-defined]

        targets = list(dict.fromkeys(targets))
        out: dict[ConfigTarget, dict[str, ConfigValue]] = {}
        for batch in _config_batches(targets):
            resources = {ConfigResource(t.kind, t.name): t for t in batch}
            routed = all(t.kind == "topic" for t in batch)

            def run(
                resources: dict[Any, ConfigTarget] = resources, routed: bool = routed
            ) -> dict[ConfigTarget, Any]:
                self._check_listening(resources.values())
                via = self._config_route() if routed else None
                if via is not None and self._refused_by(via) is not None:
                    self._route_failed(via)
                    via = self._config_route()
                asked = list(resources) + ([ConfigResource("broker", str(via))] if via is not None else [])
                admin = self._controller_admin() if routed and via is None else self._admin()
                futures = admin.describe_configs(asked, request_timeout=self.settings.request_timeout_s)
                try:
                    return {resources[r]: futures[r].result() for r in resources}
                except Exception:
                    if via is not None:
                        self._route_failed(via)
                    raise

            what = f"describe configs of {_names(batch)}"
            for target, entries in self._call(what, run, needs=access.on_configs(batch)).items():
                out[target] = {
                    name: ConfigValue(
                        e.value,
                        _enum_name(ConfigSource, e.source),
                        e.is_default,
                        e.is_read_only,
                        e.is_sensitive,
                    )
                    for name, e in entries.items()
                }
        return out

    def _check_listening(self, batch: Iterable[ConfigTarget]) -> None:
        """Raise ``KafkaUnavailableError`` when a broker whose own configs ``batch`` holds refuses
        connections (``_refused_by``): the request goes to that broker alone."""
        self._admin()  # the connect check reads the brokers' addresses
        for target in batch:
            if target.kind == "broker" and target.name.isdigit():
                refused = self._refused_by(int(target.name))
                if refused is not None:
                    raise refused

    def _config_route(self) -> int | None:
        """A broker that has just answered this operator, to carry a request of topics' configs (module
        docstring); None: librdkafka's controller. The gateway knows which brokers answered."""
        return None

    def _route_failed(self, broker: int) -> None:
        """A request routed through ``broker`` failed: do not route through it for a while."""

    def min_insync_replicas(self, topics: Iterable[str]) -> dict[str, int]:
        """Each topic's effective ``min.insync.replicas`` (its own, the broker's or Kafka's default)."""
        described = self.describe_configs(ConfigTarget.topic(t) for t in sorted(set(topics)))
        out: dict[str, int] = {}
        for target, entries in described.items():
            value = entries.get("min.insync.replicas")
            if value is not None and value.value is not None and value.value.isdigit():
                out[target.name] = int(value.value)
        return out

    def incremental_alter_configs(
        self, changes: Mapping[ConfigTarget, Sequence[ConfigChange]]
    ) -> dict[ConfigTarget, OpError]:
        """SET/DELETE/APPEND/SUBTRACT config entries; returns the resources Kafka refused. Never sent to
        brokers that lack an API the operator needs (``_require_supported``)."""
        from confluent_kafka import KafkaException
        from confluent_kafka.admin import (  # type: ignore[attr-defined]
            AlterConfigOpType,
            ConfigEntry,
            ConfigResource,
        )

        if any(changes.values()):
            self._require_supported()
        errors: dict[ConfigTarget, OpError] = {}
        for batch in _config_batches([t for t, cs in changes.items() if cs]):
            resources = {
                ConfigResource(
                    t.kind,
                    t.name,
                    incremental_configs=[
                        ConfigEntry(
                            c.name,
                            c.value if c.op != "DELETE" else None,
                            incremental_operation=getattr(AlterConfigOpType, c.op),
                        )
                        for c in changes[t]
                    ],
                ): t
                for t in batch
            }

            def run(resources: dict[Any, ConfigTarget] = resources) -> dict[ConfigTarget, OpError]:
                self._check_listening(resources.values())
                topics_only = all(t.kind == "topic" for t in resources.values())  # sent to the controller
                admin = self._controller_admin() if topics_only else self._admin()
                futures = admin.incremental_alter_configs(
                    list(resources), request_timeout=self.settings.request_timeout_s
                )
                failed: dict[ConfigTarget, OpError] = {}
                for r, f in futures.items():
                    try:
                        f.result()
                    except KafkaException as e:
                        err = e.args[0]
                        if err.name() in failures.UNREACHABLE or err.retriable():
                            raise
                        failed[resources[r]] = failures.confluent_op_error(err)
                return failed

            failed = self._call(f"alter configs of {_names(batch)}", run, needs=access.on_configs(batch))
            denied = [t for t, err in failed.items() if err.denied]
            if denied:
                raise KafkaAuthorizationError(
                    access.denied_message(
                        self.settings,
                        [access.on_configs([t]) for t in denied],
                        f"alter configs of {_names(denied)}",
                    )
                )
            errors.update(failed)
        return errors


def _config_batches(targets: Sequence[ConfigTarget]) -> list[list[ConfigTarget]]:
    """librdkafka takes at most one broker resource per request: one batch per broker, topics together
    up to ``TOPICS_PER_CONFIG_REQUEST`` a request (every topic's ~40 entries come back: the snapshot of a
    cluster of 10,000 topics reads ten bounded responses, not one of tens of MB)."""
    topics = [t for t in targets if t.kind == "topic"]
    step = TOPICS_PER_CONFIG_REQUEST
    return [[t] for t in targets if t.kind == "broker"] + [
        topics[i : i + step] for i in range(0, len(topics), step)
    ]


def _names(batch: Sequence[ConfigTarget]) -> str:
    shown = ", ".join(f"{t.kind} {t.name}" for t in batch[:3])
    return shown + (f" and {len(batch) - 3} more" if len(batch) > 3 else "")


def _enum_name(enum: Any, value: Any) -> str:
    try:
        return str(enum(value).name)
    except (ValueError, TypeError):
        return str(getattr(value, "name", value))
