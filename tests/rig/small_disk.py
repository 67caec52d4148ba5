"""A log dir on a small filesystem of its own for the rig: a size-limited tmpfs, so that "full" is real.

``kafka_rig.py up`` mounts one (profile ``disk``: node 2's second dir, 64 MiB) before the broker starts
and ``down`` unmounts every mount under the cluster's data dir before removing it (also one left by a
killed run). Needs root (the rig runs as root on developers' machines and in CI).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

FS_NAME = "kp-rig-small-dir"  # the tmpfs's source name: says whose it is in /proc/mounts


def mount(path: Path, mib: int) -> None:
    """Mount a tmpfs of ``mib`` MiB on ``path`` (an existing, empty dir)."""
    if os.geteuid() != 0:
        raise PermissionError(f"a {mib} MiB filesystem on {path} needs root (mount -t tmpfs)")
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={mib}m,mode=0755", FS_NAME, str(path)],
        check=True,
        capture_output=True,
        text=True,
        timeout=30,
    )


def mounted_under(root: Path) -> list[Path]:
    """The mount points at or under ``root`` (deepest first)."""
    prefix = str(root.resolve())
    out = []
    try:
        lines = Path("/proc/mounts").read_text().splitlines()
    except OSError:
        return []
    for line in lines:
        fields = line.split()
        if len(fields) < 2:
            continue
        point = fields[1].replace("\\040", " ").replace("\\011", "\t").replace("\\134", "\\")
        if point == prefix or point.startswith(prefix + "/"):
            out.append(Path(point))
    return sorted(out, key=lambda p: len(p.parts), reverse=True)


def unmount_under(root: Path) -> list[str]:
    """Unmount everything mounted under ``root``; returns what could not be (a lazy unmount is tried)."""
    left = []
    for point in mounted_under(root):
        done = subprocess.run(["umount", str(point)], capture_output=True, text=True, timeout=30)
        if done.returncode != 0:
            lazy = subprocess.run(["umount", "-l", str(point)], capture_output=True, text=True, timeout=30)
            if lazy.returncode != 0:
                left.append(f"{point}: {done.stderr.strip() or lazy.stderr.strip()}")
    return left
