"""kafka-placement-operator: keeps a Kafka cluster's replica placement where its owners declared it.

Layers (enforced by import-linter, see pyproject.toml): ``model`` (typed contracts) <- ``planning``
(pure planner) <- ``spark`` (distributed engine); ``model`` <- ``kafka`` (the one Kafka gateway)
<- ``execution`` (executor state machine); ``handlers`` (kopf) and ``cli`` on top.
"""

__version__ = "0.1.0"
