"""Local test rigs: real Apache Kafka (kafka_rig.py) and a real kube-apiserver (k8s_rig.py).

Each rig is a CLI (`up` / `down` / `status`) that writes its connection details into `.rig/rig.json`
in the repo root; the integration tests read that file (tests/integration/conftest.py).
"""
