"""Where the rigs keep what they fetch and build: outside the repo, ``$KP_CACHE`` (default
``~/.cache/kafka-placement``): Kafka's jars and class-data archives, the Kubernetes binaries, the node's
packages and images, the Spark workers' Python."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    return Path(os.environ.get("KP_CACHE", str(Path.home() / ".cache" / "kafka-placement")))
