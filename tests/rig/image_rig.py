"""The operator image, built here from the unchanged Dockerfile and loaded into the node rig's runtime.

No registry is reachable from this machine, so:

    image_rig.py base       # the stand-in for python:3.11-slim-bookworm (an OCI layout, cached)
    image_rig.py build      # the project image (a docker-save archive, cached by content)
    image_rig.py load       # build (or reuse) it and import it into the node's containerd

**The stand-in base** is Debian bookworm from Debian's packages (mmdebstrap, unpacked from its .deb by
tests/rig/node/fetch-debs.sh, never installed): `minbase` + python3 (3.11) + python3-pip +
ca-certificates, docs and man pages left out like the slim images. Two differences from the official
image, both so the unchanged Dockerfile works on it: Debian's `EXTERNALLY-MANAGED` marker is removed
(pip may install into the system Python, as in the official image, where Python lives in /usr/local),
and this machine's local CAs (/usr/local/share/ca-certificates) are added, so pip inside the build
works behind a TLS-intercepting egress proxy. It is passed through the Dockerfile's `ARG PYTHON_IMAGE`
as ``kafka-placement-python-standin:3.11-bookworm``, a BuildKit named context backed by the OCI layout.

**The project image** is built by BuildKit (buildkitd + buildctl from tests/rig/k8s/build.sh) with its
built-in Dockerfile frontend: the `# syntax=docker/dockerfile:1` line would fetch that frontend image
from Docker Hub, so `cmdline=dockerfile.v0` tells the frontend the syntax is resolved (what BuildKit's
own tests do); `RUN --mount=type=bind,from=builder` and the rest run with their real semantics.
buildkitd runs only for the build (OCI worker: Debian's runc, host network for apt and pip), its
socket under the rig dir; its layer cache lives in the cache dir, pruned to BUILDKIT_KEEP_MB.
The archive is named ``kafka-placement-operator:<chart appVersion>`` (the chart's default image) and
cached under $KP_CACHE/images/ by a hash of everything the build reads: the Dockerfile, .dockerignore,
pyproject.toml, operator/ (as .dockerignore filters it), the base's digest and the
BuildKit version.

Exit codes: 0 ok, 1 failure, 2 bad input (a missing tool or rig).
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.rig.k8s_rig import DEFAULT_K8S_VERSION, default_bin_dir
from tests.rig.kafka_rig import RigError, rig_parser, run_command, stop_pids
from tests.rig.node_rig import cache_dir, fetch_debs
from tests.rig.node_rig import main as node_main
from tests.rig.probes import rig_processes

REPO = Path(__file__).resolve().parents[2]
STANDIN = "kafka-placement-python-standin:3.11-bookworm"
STORE_ID = "kp-standin"  # buildctl --oci-layout id
MIRRORS = (
    "deb http://deb.debian.org/debian bookworm main",
    "deb http://deb.debian.org/debian bookworm-updates main",
    "deb http://deb.debian.org/debian-security bookworm-security main",
)
MMDEBSTRAP_ARGS = (
    "--mode=root",
    "--variant=minbase",
    "--include=python3,python3-pip,ca-certificates",
    "--dpkgopt=path-exclude=/usr/share/man/*",
    "--dpkgopt=path-exclude=/usr/share/doc/*",
    "--dpkgopt=path-include=/usr/share/doc/*/copyright",
    "--dpkgopt=path-exclude=/usr/share/locale/*",
    '--customize-hook=rm -f "$1"/usr/lib/python3*/EXTERNALLY-MANAGED',
    '--customize-hook=for c in /usr/local/share/ca-certificates/*.crt; do [ -f "$c" ] && '
    'cp "$c" "$1"/usr/local/share/ca-certificates/; done; chroot "$1" update-ca-certificates',
    # the image's apt starts empty, like the official image's
    '--customize-hook=rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*',
)
STANDIN_CONFIG = {
    "Env": [
        "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "LANG=C.UTF-8",
    ],
    "Cmd": ["python3"],
}
BUILDKIT_VERSION = os.environ.get("BUILDKIT_VERSION", "v0.34.2")
BUILDKIT_KEEP_MB = int(os.environ.get("BUILDKIT_KEEP_MB", "6000"))
KEEP_ARCHIVES = 2  # image archives kept (the last used first): ~850 MiB each


def images_dir() -> Path:
    return cache_dir() / "images"


def chart_image() -> str:
    """The chart's default image: values.yaml image.repository and Chart.yaml appVersion."""
    chart = (REPO / "charts" / "kafka-placement-operator" / "Chart.yaml").read_text()
    values = (REPO / "charts" / "kafka-placement-operator" / "values.yaml").read_text()
    app = next(x for x in chart.splitlines() if x.startswith("appVersion:")).split(":", 1)[1]
    repo_line = values[values.index("image:") :].split("repository:", 1)[1].splitlines()[0]
    return f"{repo_line.strip()}:{app.strip().strip(chr(34))}"


def _sha(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _run(cmd: Sequence[str], what: str, timeout: float, env: dict[str, str] | None = None) -> str:
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, check=False)
    except FileNotFoundError as e:
        raise RigError(f"image rig: {what}: {e}", 2) from e
    except subprocess.TimeoutExpired as e:
        raise RigError(f"image rig: {what} timed out after {timeout:.0f}s", 1) from e
    if r.returncode != 0:
        tail = "\n  ".join((r.stderr or r.stdout).strip().splitlines()[-15:])
        raise RigError(f"image rig: {what} failed (exit {r.returncode}):\n  {tail}", 1)
    return r.stdout


# ---------------------------------------------------------------------------------------- base


def _blob(layout: Path, data: bytes) -> dict[str, object]:
    digest = _sha(data)
    path = layout / "blobs" / "sha256" / digest.split(":", 1)[1]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return {"digest": digest, "size": len(data)}


def write_layout(layer_tar: Path, layout: Path, ref_name: str) -> str:
    """An OCI image layout holding one image (the tar as its single uncompressed layer); returns the
    manifest's digest."""
    layout.mkdir(parents=True)
    (layout / "oci-layout").write_text(json.dumps({"imageLayoutVersion": "1.0.0"}))
    blobs = layout / "blobs" / "sha256"
    blobs.mkdir(parents=True)
    h = hashlib.sha256()
    tmp = blobs / "layer.partial"
    with layer_tar.open("rb") as src, tmp.open("wb") as dst:
        for chunk in iter(lambda: src.read(1 << 20), b""):
            h.update(chunk)
            dst.write(chunk)
    layer_digest = "sha256:" + h.hexdigest()
    tmp.rename(blobs / h.hexdigest())
    config = {
        "architecture": "amd64",
        "os": "linux",
        "config": STANDIN_CONFIG,
        "rootfs": {"type": "layers", "diff_ids": [layer_digest]},
        "history": [{"created_by": "tests/rig/image_rig.py base (mmdebstrap bookworm)"}],
    }
    cfg = _blob(layout, json.dumps(config, sort_keys=True).encode())
    manifest = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", **cfg},
        "layers": [
            {
                "mediaType": "application/vnd.oci.image.layer.v1.tar",
                "digest": layer_digest,
                "size": layer_tar.stat().st_size,
            }
        ],
    }
    man = _blob(layout, json.dumps(manifest, sort_keys=True).encode())
    index = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [
            {
                "mediaType": "application/vnd.oci.image.manifest.v1+json",
                **man,
                "annotations": {"org.opencontainers.image.ref.name": ref_name},
                "platform": {"architecture": "amd64", "os": "linux"},
            }
        ],
    }
    (layout / "index.json").write_text(json.dumps(index, sort_keys=True))
    return str(man["digest"])


def base_key(debs: Path) -> str:
    cas = sorted(Path("/usr/local/share/ca-certificates").glob("*.crt"))
    h = hashlib.sha256()
    for part in (*MMDEBSTRAP_ARGS, *MIRRORS, json.dumps(STANDIN_CONFIG, sort_keys=True)):
        h.update(part.encode() + b"\0")
    h.update((debs / "VERSIONS").read_bytes())
    for ca in cas:
        h.update(ca.read_bytes())
    return h.hexdigest()[:16]


def ensure_base(debs: Path) -> tuple[Path, str]:
    """The stand-in base's OCI layout (built once per recipe) and its manifest digest."""
    layout = images_dir() / f"python-standin-{base_key(debs)}"
    done = layout / ".digest"
    if done.exists():
        return layout, done.read_text().strip()
    shutil.rmtree(layout, ignore_errors=True)
    images_dir().mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(dir=images_dir(), prefix=".base-") as tmp:
        tar = Path(tmp) / "rootfs.tar"
        env = {**os.environ, "PATH": f"{debs}/usr/bin:{os.environ.get('PATH', '/usr/bin:/bin')}"}
        _run(
            [f"{debs}/usr/bin/mmdebstrap", "--quiet", *MMDEBSTRAP_ARGS, "bookworm", str(tar), *MIRRORS],
            "mmdebstrap bookworm (the stand-in base)",
            timeout=1200,
            env=env,
        )
        digest = write_layout(tar, Path(tmp) / "layout", STANDIN)
        (Path(tmp) / "layout").rename(layout)
    done.write_text(digest)
    print(f"image rig: stand-in base built in {time.monotonic() - started:.0f}s: {layout}", file=sys.stderr)
    return layout, digest


# ---------------------------------------------------------------------------------------- build


def _context_files() -> Iterator[Path]:
    """What the build reads from the context (the Dockerfile's COPY sources as .dockerignore leaves them)."""
    yield from (REPO / n for n in ("Dockerfile", ".dockerignore", "pyproject.toml"))
    for path in sorted((REPO / "operator").rglob("*")):
        rel = path.relative_to(REPO)
        if (
            path.is_file()
            and "__pycache__" not in rel.parts
            and path.suffix != ".pyc"
            and not any(p.endswith(".egg-info") for p in rel.parts)
        ):
            yield path


def image_key(base_digest: str) -> str:
    h = hashlib.sha256(f"{base_digest}\0{BUILDKIT_VERSION}\0{chart_image()}\0".encode())
    for path in _context_files():
        h.update(str(path.relative_to(REPO)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def buildkit_bins() -> tuple[Path, Path]:
    bins = default_bin_dir(os.environ.get("K8S_VERSION", DEFAULT_K8S_VERSION))
    buildkitd, buildctl = bins / "buildkitd", bins / "buildctl"
    if not (os.access(buildkitd, os.X_OK) and os.access(buildctl, os.X_OK)):
        raise RigError(f"image rig: buildkitd/buildctl not in {bins}: run `bash tests/rig/k8s/build.sh`", 2)
    return buildkitd, buildctl


def build(rig_dir: Path, debs: Path) -> Path:
    """The project image archive for the current sources (cached by content); returns its path."""
    layout, base_digest = ensure_base(debs)
    archive = images_dir() / f"operator-{image_key(base_digest)}.tar"
    if archive.exists():
        os.utime(archive)  # the last used is the last pruned
        print(f"image rig: cached {archive.name} ({chart_image()})", file=sys.stderr)
        return archive
    buildkitd, buildctl = buildkit_bins()
    state = rig_dir / "image"
    shutil.rmtree(state, ignore_errors=True)
    state.mkdir(parents=True)
    sock = state / "buildkitd.sock"
    root = cache_dir() / "buildkit"
    started = time.monotonic()
    (state / "buildkitd.toml").write_text("")  # not /etc/buildkit/buildkitd.toml: this build's own
    log = (state / "buildkitd.log").open("wb")
    daemon = subprocess.Popen(
        [
            str(buildkitd),
            f"--root={root}",
            f"--addr=unix://{sock}",
            "--containerd-worker=false",
            "--oci-worker=true",
            f"--oci-worker-binary={debs}/usr/sbin/runc",
            "--oci-worker-net=host",
            "--oci-worker-gc",
            f"--oci-worker-gc-keepstorage={BUILDKIT_KEEP_MB}",
            f"--config={state / 'buildkitd.toml'}",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "PATH": f"{debs}/usr/sbin:{debs}/usr/bin:{os.environ.get('PATH', '')}"},
        start_new_session=True,
    )
    try:
        addr = f"unix://{sock}"
        deadline = time.monotonic() + 60
        while True:
            if daemon.poll() is not None:
                raise RigError(f"image rig: buildkitd exited: {_tail(state / 'buildkitd.log')}", 1)
            if (
                sock.exists()
                and subprocess.run(
                    [str(buildctl), f"--addr={addr}", "debug", "workers"], capture_output=True, check=False
                ).returncode
                == 0
            ):
                break
            if time.monotonic() > deadline:
                raise RigError(f"image rig: buildkitd not ready in 60s: {_tail(state / 'buildkitd.log')}", 1)
            time.sleep(0.5)
        partial = archive.with_suffix(".partial")
        cmd = [
            str(buildctl),
            f"--addr={addr}",
            "build",
            "--progress=plain",
            "--frontend=dockerfile.v0",
            f"--local=context={REPO}",
            f"--local=dockerfile={REPO}",
            "--opt=cmdline=dockerfile.v0",
            f"--opt=build-arg:PYTHON_IMAGE={STANDIN}",
            f"--opt=context:{STANDIN}=oci-layout://{STORE_ID}@{base_digest}",
            f"--oci-layout={STORE_ID}={layout}",
            f"--output=type=docker,name=docker.io/library/{chart_image()},dest={partial}",
        ]
        with (state / "build.log").open("wb") as out:
            r = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, timeout=3600, check=False)
        if r.returncode != 0:
            raise RigError(f"image rig: buildctl build failed:\n  {_tail(state / 'build.log', 25)}", 1)
        partial.rename(archive)
        subprocess.run(
            [str(buildctl), f"--addr={addr}", "prune", f"--keep-storage={BUILDKIT_KEEP_MB}"],
            capture_output=True,
            check=False,
        )
    finally:
        stop_pids([daemon.pid], 30.0)
        daemon.wait()
        log.close()
    prune_archives(images_dir(), KEEP_ARCHIVES)
    size = archive.stat().st_size >> 20
    took = time.monotonic() - started
    print(f"image rig: built {chart_image()} in {took:.0f}s ({size} MiB): {archive}", file=sys.stderr)
    return archive


def prune_archives(where: Path, keep: int) -> list[Path]:
    """Delete all but the ``keep`` most recently used image archives; returns those deleted."""
    archives = sorted(where.glob("operator-*.tar"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in archives[keep:]:
        old.unlink()
    return archives[keep:]


def _tail(path: Path, lines: int = 10) -> str:
    try:
        return "\n  ".join(path.read_text(errors="replace").strip().splitlines()[-lines:])
    except OSError:
        return "(no log)"


def image_config(archive: Path) -> dict[str, object]:
    """The image config inside a docker-save archive (what the kubelet will run)."""
    with tarfile.open(archive) as tar:
        manifest = json.load(io.BytesIO(_member(tar, "manifest.json")))
        config: dict[str, object] = json.load(io.BytesIO(_member(tar, manifest[0]["Config"])))
    return config


def _member(tar: tarfile.TarFile, name: str) -> bytes:
    f = tar.extractfile(name)
    if f is None:
        raise RigError(f"image rig: {name} missing from the archive", 1)
    return f.read()


# ---------------------------------------------------------------------------------------- CLI


def cmd_base(args: argparse.Namespace) -> int:
    layout, digest = ensure_base(fetch_debs())
    print(f"{layout} {digest}")
    return 0


def cmd_build(args: argparse.Namespace) -> int:
    print(build(Path(args.rig_dir).resolve(), fetch_debs()))
    return 0


def cmd_load(args: argparse.Namespace) -> int:
    archive = build(Path(args.rig_dir).resolve(), fetch_debs())
    return node_main(["load-image", "--rig-dir", str(args.rig_dir), str(archive)])


def cmd_down(args: argparse.Namespace) -> int:
    """Stop a buildkitd of this rig left running by a build that was killed (a build stops its own)."""
    pids = rig_processes(Path(args.rig_dir).resolve(), ("buildkitd",))
    stop_pids(pids, 30.0)
    if pids:
        print(f"image rig: stopped a leftover buildkitd ({', '.join(map(str, pids))})")
    return 0


def parser() -> argparse.ArgumentParser:
    p, sub, common = rig_parser("image_rig.py", __doc__, stop_timeout=False)
    for name, func, text in (
        ("down", cmd_down, "stop a buildkitd a killed build left behind"),
        ("base", cmd_base, "build (or reuse) the stand-in base; prints its layout dir and digest"),
        ("build", cmd_build, "build (or reuse) the project image; prints the archive's path"),
        ("load", cmd_load, "build (or reuse) the project image and import it into the node rig"),
    ):
        sub.add_parser(name, parents=[common], help=text).set_defaults(func=func)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    return run_command(parser(), argv, "image rig")


if __name__ == "__main__":
    sys.exit(main())
