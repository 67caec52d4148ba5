"""The compatibility tests reuse the e2e fixtures (the operator as a process against the rig's
kube-apiserver): only the k8s rig need be up (`scripts/rig.sh up k8s`); each test brings its own Kafka."""

from tests.e2e.conftest import *  # noqa: F403
