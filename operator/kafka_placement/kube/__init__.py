"""The one gateway to the Kubernetes API (kube/gateway.py), as kafka/gateway.py is for Kafka."""
