"""The reconcile layer: what the operator decides and does for a KafkaCluster and its intents, below the
kopf glue (``handlers``) and above the executor, the planner and the gateways.

Pure decision modules (``decide``, ``healing``, ``retiring``, ``pressure``, ``new_partitions``, ``status``)
take facts and return actions; the shell (``reconciler``) reads Kafka and Kubernetes through their gateways,
performs the actions and writes the statuses; around it the leader election (``leader``, ``fencing``), the
record store (``store``), plan review (``plan_review``), traffic sampling (``traffic_sampler``) and the
Prometheus series (``metrics``). Nothing here imports kopf (an import-linter contract).
"""
