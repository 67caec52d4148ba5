"""A packet filter rule a test adds and always removes: connections to one local port are refused.

It stands for a network that cuts the operator off from one broker while the cluster still reaches it
(a broker alive and in sync that the operator cannot read must not be taken for dead). The rule
rejects, with a TCP reset, every packet this machine sends to ``127.0.0.1:<port>``; the test points only
the operator at that port (a listener of the broker's own that its peers do not use), so the brokers and
the controller quorum are untouched. The iptables binary is the node rig's, unpacked from Debian's
packages (tests/rig/node/fetch-debs.sh, cached: nothing is installed on the machine); adding a rule needs
root, as the node rig does.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager

from tests.rig import node_rig


def _iptables(*args: str) -> subprocess.CompletedProcess[str]:
    debs = node_rig.fetch_debs()
    lib = debs / "usr" / "lib" / "x86_64-linux-gnu"
    env = {**os.environ, "LD_LIBRARY_PATH": str(lib), "XTABLES_LIBDIR": str(lib / "xtables")}
    tool = debs / "usr" / "sbin" / "xtables-nft-multi"
    return subprocess.run([str(tool), "iptables", *args], capture_output=True, text=True, env=env, timeout=30)


def _rule(port: int) -> list[str]:
    return [
        "OUTPUT",
        "-p",
        "tcp",
        "-d",
        "127.0.0.1",
        "--dport",
        str(port),
        "-j",
        "REJECT",
        "--reject-with",
        "tcp-reset",
    ]


def usable() -> str | None:
    """None when rules can be added here; else why not."""
    if os.geteuid() != 0:
        return "adding a packet filter rule needs root"
    listed = _iptables("-L", "OUTPUT", "-n")
    return None if listed.returncode == 0 else f"iptables does not work here: {listed.stderr.strip()}"


@contextmanager
def refused(port: int) -> Iterator[None]:
    """Connections to 127.0.0.1:``port`` refused (existing ones reset) inside the block, removed after."""
    added = _iptables("-I", *_rule(port))
    assert added.returncode == 0, f"iptables -I: {added.stderr}"
    try:
        yield
    finally:
        removed = _iptables("-D", *_rule(port))
        assert removed.returncode == 0, f"iptables -D (the rule on port {port} may be left): {removed.stderr}"
