"""A benchmark's ``--code CHECKOUT``: that checkout's planner plans (an older commit's, for a paired run in
one sequence). Called before the planner is first imported."""

from __future__ import annotations

import sys
from pathlib import Path


def plan_with_code(argv: list[str]) -> None:
    """With ``--code CHECKOUT`` in ``argv``, the checkout's ``operator`` first on ``sys.path``."""
    if "--code" in argv:
        sys.path[:0] = [str(Path(argv[argv.index("--code") + 1]).resolve() / "operator")]
