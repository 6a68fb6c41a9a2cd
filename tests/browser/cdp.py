"""
A headless Chromium driven over the DevTools protocol, for the browser suite.

Chromium comes from Debian's `chromium` package (scripts/dev installs it;
nothing is downloaded). It starts with --remote-debugging-port=0 and a fresh
profile; the port is read from DevToolsActivePort in the profile folder, and
one page target is driven through python3-websocket. Console errors, uncaught
exceptions and browser log errors are collected as they arrive, so a test can
assert that a view produced none.
"""
import base64
import itertools
import json
import os
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path

import websocket


class BrowserUnavailable(Exception):
    """Chromium is not installed or does not start here."""


def find_chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


class Browser:
    def __init__(self, workdir, width=1400, height=1000):
        exe = find_chromium()
        if not exe:
            raise BrowserUnavailable("no chromium on PATH (Debian: apt-get install chromium; scripts/dev deps)")
        self.dir = Path(workdir)
        self.profile = self.dir / "profile"
        self.profile.mkdir(parents=True, exist_ok=True)
        self.log_path = self.dir / "chromium.log"
        argv = [exe, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                "--no-default-browser-check", "--disable-extensions", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--mute-audio", "--hide-scrollbars",
                f"--user-data-dir={self.profile}", "--remote-debugging-port=0", "--remote-allow-origins=*",
                f"--window-size={width},{height}", "about:blank"]
        log = open(self.log_path, "wb")
        # Its own process group: the renderers and helpers go with it at close().
        self.proc = subprocess.Popen(argv, stdout=log, stderr=log, start_new_session=True)
        log.close()
        self.ws = None
        self.events = []
        self.errors = []
        self._ids = itertools.count(1)
        try:
            self._connect()
        except Exception:
            self.close()
            raise

    def _connect(self, timeout=60.0):
        port_file = self.profile / "DevToolsActivePort"
        deadline = time.monotonic() + timeout
        port = None
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise BrowserUnavailable(f"chromium exited {self.proc.returncode}: {self.log_tail()}")
            try:
                port = int(port_file.read_text().split()[0])
                break
            except (FileNotFoundError, ValueError, IndexError):
                time.sleep(0.1)
        if port is None:
            raise BrowserUnavailable(f"chromium opened no DevTools port within {timeout}s: {self.log_tail()}")
        targets = []
        while time.monotonic() < deadline and not targets:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as r:
                targets = [t for t in json.load(r) if t.get("type") == "page"]
            if not targets:
                time.sleep(0.1)
        if not targets:
            raise BrowserUnavailable("chromium has no page target")
        self.ws = websocket.create_connection(targets[0]["webSocketDebuggerUrl"], timeout=60, suppress_origin=True)
        self.call("Runtime.enable")
        self.call("Log.enable")
        self.call("Page.enable")

    def log_tail(self, n=20):
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except FileNotFoundError:
            return ""

    def _event(self, msg):
        self.events.append(msg)
        m, p = msg.get("method"), msg.get("params", {})
        if m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
            args = " ".join(str(a.get("value", a.get("description", ""))) for a in p.get("args", []))
            self.errors.append(f"console.{p['type']}: {args}")
        elif m == "Runtime.exceptionThrown":
            d = p.get("exceptionDetails", {})
            self.errors.append(f"exception: {d.get('text')} {d.get('exception', {}).get('description', '')}")
        elif m == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
            e = p["entry"]
            self.errors.append(f"log ({e.get('source')}): {e.get('text')} {e.get('url', '')}")

    def call(self, method, **params):
        mid = next(self._ids)
        self.ws.send(json.dumps({"id": mid, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == mid:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            if "method" in msg:
                self._event(msg)

    def evaluate(self, expr):
        r = self.call("Runtime.evaluate", expression=expr, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in r:
            raise RuntimeError(f"evaluate {expr!r}: {r['exceptionDetails']}")
        return r.get("result", {}).get("value")

    def wait_for(self, expr, timeout=30.0):
        """Poll @expr until it is truthy; a page still loading (no body yet) counts as not yet."""
        deadline = time.monotonic() + timeout
        last = None
        while True:
            try:
                v = self.evaluate(expr)
                if v:
                    return v
            except RuntimeError as e:
                last = e
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {expr} (last error: {last})")
            time.sleep(0.05)

    def goto(self, url):
        self.call("Page.navigate", url=url)

    def screenshot(self, path):
        m = self.call("Page.getLayoutMetrics")
        size = m.get("cssContentSize") or m["contentSize"]
        clip = {"x": 0, "y": 0, "width": size["width"], "height": min(size["height"], 6000), "scale": 1}
        r = self.call("Page.captureScreenshot", format="png", captureBeyondViewport=True, clip=clip)
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(r["data"]))
        return path

    def close(self):
        if self.ws is not None:
            try:
                self.ws.close()
            except Exception:
                pass
            self.ws = None
        if self.proc and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, 15)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, 9)
                self.proc.wait()
