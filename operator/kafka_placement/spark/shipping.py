"""The project's own package, shipped to Spark executors that do not have it installed.

On a local master the executors are this process's JVM and Python: nothing to ship. On a cluster (a
standalone master, YARN, Kubernetes with another image) the workers' Python has pyspark, pandas and
pyarrow, not this project, so the shard function the engine sends would fail to unpickle. ``ship``
zips the installed ``kafka_placement`` package (its ``.py`` files, as imported by this driver, so the
executors run exactly the driver's code) and adds it with ``SparkContext.addPyFile``; Spark fetches it
on every executor and puts it first on their ``sys.path``. The zip lives in a temporary directory until
this process exits (the driver's file server serves it from there).
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
import zipfile
from pathlib import Path
from typing import Any

_shipped: dict[int, Path] = {}  # id(SparkContext) -> the zip it was given


def package_zip(dest_dir: Path) -> Path:
    """A zip of this package's source files, importable as ``kafka_placement`` from the zip's root."""
    root = Path(__file__).resolve().parents[1]
    out = dest_dir / f"{root.name}.zip"
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for path in sorted(root.rglob("*.py")):
            if "__pycache__" not in path.parts:
                z.write(path, f"{root.name}/{path.relative_to(root).as_posix()}")
    return out


def needs_shipping(master: str) -> bool:
    return not master.startswith("local")


def ship(context: Any) -> Path | None:
    """Add the package to ``context`` (a SparkContext) unless its master is local or it has it already;
    returns the zip's path when shipped."""
    if not needs_shipping(str(context.master)):
        return None
    if id(context) in _shipped:
        return _shipped[id(context)]
    tmp = Path(tempfile.mkdtemp(prefix="kafka-placement-pyfiles-"))
    atexit.register(shutil.rmtree, tmp, True)
    path = package_zip(tmp)
    context.addPyFile(str(path))
    _shipped[id(context)] = path
    return path
