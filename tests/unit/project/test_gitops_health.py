"""The Argo CD health checks ship twice, as docs/gitops/health.lua and as argo-cd chart values
(docs/gitops/argocd-values.yaml): one script for the four kinds, the same in both."""

from __future__ import annotations

from pathlib import Path

import yaml

from kafka_placement.model.crd_parts import GROUP, PLURALS

ROOT = Path(__file__).resolve().parents[3]


def test_the_argo_cd_values_carry_the_health_script_for_every_kind() -> None:
    script = (ROOT / "docs/gitops/health.lua").read_text()
    values = yaml.safe_load((ROOT / "docs/gitops/argocd-values.yaml").read_text())
    cm = values["configs"]["cm"]
    assert set(cm) == {f"resource.customizations.health.{GROUP}_{kind}" for kind in PLURALS}
    assert all(text == script for text in cm.values())
