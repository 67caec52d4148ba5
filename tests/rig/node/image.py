"""Pack a root filesystem into a single-layer image archive (`docker save` format) that
`ctr images import` loads into the node's containerd; no registry is reachable from this rig.

    python -m tests.rig.node.image ROOTFS_DIR NAME:TAG OUT.tar --entrypoint /pause

The layer is a tar of ROOTFS_DIR (owners, modes and symlinks kept, numeric ids), the config names
the layer by its sha256 (diff id) as the image spec requires, so containerd verifies it on import.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import sys
import tarfile
from collections.abc import Sequence
from pathlib import Path


def _layer(rootfs: Path) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path in sorted(rootfs.rglob("*")):
            tar.add(path, arcname=str(path.relative_to(rootfs)), recursive=False)
    return buf.getvalue()


def pack(
    rootfs: Path,
    name: str,
    out: Path,
    entrypoint: Sequence[str] = (),
    cmd: Sequence[str] = (),
    user: str = "",
) -> str:
    """Write the archive to `out`; returns the image config's digest."""
    layer = _layer(rootfs)
    diff_id = "sha256:" + hashlib.sha256(layer).hexdigest()
    config = {
        "architecture": "amd64",
        "os": "linux",
        "config": {
            "Entrypoint": list(entrypoint) or None,
            "Cmd": list(cmd) or None,
            "User": user,
            "Env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],
        },
        "rootfs": {"type": "layers", "diff_ids": [diff_id]},
        "history": [{"created_by": "tests/rig/node/image.py"}],
    }
    config_bytes = json.dumps(config, sort_keys=True).encode()
    config_name = hashlib.sha256(config_bytes).hexdigest() + ".json"
    manifest = [{"Config": config_name, "RepoTags": [name], "Layers": ["layer.tar"]}]
    with tarfile.open(out, "w") as tar:
        for member, data in (
            ("layer.tar", layer),
            (config_name, config_bytes),
            ("manifest.json", json.dumps(manifest).encode()),
        ):
            info = tarfile.TarInfo(member)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return "sha256:" + config_name.removesuffix(".json")


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else "")
    p.add_argument("rootfs", type=Path)
    p.add_argument("name")
    p.add_argument("out", type=Path)
    p.add_argument("--entrypoint", nargs="*", default=[])
    p.add_argument("--cmd", nargs="*", default=[])
    p.add_argument("--user", default="")
    a = p.parse_args(argv)
    if not a.rootfs.is_dir():
        print(f"image: {a.rootfs} is not a directory", file=sys.stderr)
        return 2
    print(pack(a.rootfs, a.name, a.out, a.entrypoint, a.cmd, a.user))
    return 0


if __name__ == "__main__":
    sys.exit(main())
