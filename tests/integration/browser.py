"""A real headless Chromium (Debian's package, scripts/install-chromium.sh) driven over the Chrome
DevTools Protocol with websocket-client: load a local page, read its DOM after layout, take a PNG
screenshot, and record everything that tells a page misbehaved: console errors, uncaught exceptions,
failed loads (Log.entryAdded) and JavaScript dialogs (an injected ``alert`` that ran).

One browser process serves many pages (``Browser.load`` opens a fresh tab per page). Every wait is
bounded by ``TIMEOUT_S``; the browser is always ended by ``Browser.close``.
"""

from __future__ import annotations

import base64
import contextlib
import json
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import websocket

TIMEOUT_S = 30.0


@dataclass
class Tab:
    """A page loaded in its own tab; ``problems`` lists what went wrong while it loaded and ran."""

    browser: Browser
    session: str
    target: str
    problems: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        result: dict[str, Any] = self.browser.call(method, params, session=self.session)
        return result

    def evaluate(self, expression: str) -> Any:
        """The JSON value of ``expression`` in the page (the test's own probe, not the page's script)."""
        r = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in r:
            raise AssertionError(f"probe failed: {r['exceptionDetails']}")
        return r["result"].get("value")

    def screenshot(self, path: Path) -> Path:
        """The whole page (not only the viewport) as a PNG."""
        size = self.call("Page.getLayoutMetrics")["cssContentSize"]
        clip = {"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1}
        r = self.call("Page.captureScreenshot", format="png", clip=clip, captureBeyondViewport=True)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(r["data"]))
        return path

    def close(self) -> None:
        self.browser.call("Target.closeTarget", {"targetId": self.target})


class Browser:
    """``chromium --headless`` with a DevTools port on loopback, its profile in a temporary dir."""

    def __init__(self, binary: str | None = None) -> None:
        exe = binary or shutil.which("chromium")
        if exe is None:
            raise RuntimeError("chromium not found: run `bash scripts/install-chromium.sh`")
        self._profile = tempfile.mkdtemp(prefix="kp-chromium-")
        self._log = open(Path(self._profile) / "chromium.log", "wb")  # noqa: SIM115 - closed in close()
        args = [
            exe,
            "--headless",
            "--no-sandbox",  # root in CI and on the developers' machines
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--no-default-browser-check",
            "--hide-scrollbars",
            "--window-size=1100,900",
            "--remote-debugging-address=127.0.0.1",
            "--remote-debugging-port=0",
            f"--user-data-dir={self._profile}",
            "about:blank",
        ]
        self.proc = subprocess.Popen(args, stdout=self._log, stderr=subprocess.STDOUT)
        self._next = 0
        self._events: list[dict[str, Any]] = []
        try:
            self.ws = websocket.create_connection(self._endpoint(), timeout=TIMEOUT_S, suppress_origin=True)
        except BaseException:
            self.close()
            raise

    def _endpoint(self) -> str:
        """The browser's websocket address, from the DevToolsActivePort file Chromium writes."""
        port_file = Path(self._profile) / "DevToolsActivePort"
        deadline = time.monotonic() + TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"chromium exited {self.proc.returncode}: {self.log_tail()}")
            lines = port_file.read_text().splitlines() if port_file.exists() else []
            if len(lines) >= 2:
                return f"ws://127.0.0.1:{lines[0]}{lines[1]}"
            time.sleep(0.05)
        raise RuntimeError(f"chromium opened no DevTools port in {TIMEOUT_S} s: {self.log_tail()}")

    def log_tail(self) -> str:
        self._log.flush()
        return (Path(self._profile) / "chromium.log").read_text(errors="replace")[-2000:]

    def call(self, method: str, params: dict[str, Any] | None = None, session: str | None = None) -> Any:
        """Send one command and wait for its answer; events that arrive meanwhile are kept."""
        self._next += 1
        msg: dict[str, Any] = {"id": self._next, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        self.ws.send(json.dumps(msg))
        deadline = time.monotonic() + TIMEOUT_S
        while time.monotonic() < deadline:
            m = json.loads(self.ws.recv())
            if m.get("id") == self._next:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                return m.get("result", {})
            if "method" in m:
                self._events.append(m)
        raise TimeoutError(f"{method}: no answer in {TIMEOUT_S} s")

    def _event(self) -> dict[str, Any]:
        if self._events:
            return self._events.pop(0)
        while True:
            m = json.loads(self.ws.recv())  # bounded by the socket's timeout
            if "method" in m:
                return dict(m)

    def load(self, url: str) -> Tab:
        """Open ``url`` in a new tab and wait for its load event and for layout; the tab records console
        errors, exceptions, failed loads and dialogs (each dialog is dismissed, so the page goes on)."""
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        tab = Tab(self, session, target)
        for domain in ("Page", "Runtime", "Log"):
            tab.call(f"{domain}.enable")
        self._events = [e for e in self._events if e.get("sessionId") != session]  # about:blank's
        tab.call("Page.navigate", url=url)
        deadline = time.monotonic() + TIMEOUT_S
        loaded = False
        while not loaded:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{url}: no load event in {TIMEOUT_S} s")
            e = self._event()
            if e.get("sessionId") != session:
                continue
            loaded = self._record(tab, e)
        # a moment for what follows the load event (a late error or dialog), then the events queued
        tab.call("Runtime.evaluate", expression="new Promise(r => setTimeout(r, 50))", awaitPromise=True)
        for e in [e for e in self._events if e.get("sessionId") == session]:
            self._events.remove(e)
            self._record(tab, e)
        return tab

    def _record(self, tab: Tab, e: dict[str, Any]) -> bool:
        """Note a problem the event shows; True on the page's load event."""
        method, p = e["method"], e.get("params", {})
        if method == "Page.javascriptDialogOpening":
            tab.dialogs.append(f"{p.get('type')}: {p.get('message')}")
            self._next += 1
            msg = {"id": self._next, "method": "Page.handleJavaScriptDialog", "params": {"accept": True}}
            self.ws.send(json.dumps({**msg, "sessionId": tab.session}))
        elif method == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert", "warning"):
            args = [a.get("value", a.get("description")) for a in p.get("args", [])]
            tab.problems.append(f"console.{p['type']}: {args}")
        elif method == "Runtime.exceptionThrown":
            tab.problems.append(f"exception: {p['exceptionDetails'].get('text')}")
        elif method == "Log.entryAdded" and p["entry"]["level"] in ("error", "warning"):
            entry = p["entry"]
            tab.problems.append(f"{entry['source']} {entry['level']}: {entry['text']} {entry.get('url', '')}")
        return bool(method == "Page.loadEventFired")

    def close(self) -> None:
        ws = getattr(self, "ws", None)
        if ws is not None:
            with contextlib.suppress(Exception):  # the browser may be gone already
                self.call("Browser.close")
            ws.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
        self._log.close()
        shutil.rmtree(self._profile, ignore_errors=True)
