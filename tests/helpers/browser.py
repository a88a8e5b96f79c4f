"""A headless Chromium driven through chromedriver's W3C WebDriver HTTP API (plain urllib: no selenium needed),
for the pages minibert writes and the documentation site (the `browser` fixture of tests/conftest.py).

Chromium and chromedriver come from Debian: apt-get update && apt-get install -y chromium chromium-driver.
"""

from __future__ import annotations

import base64
import json
import socket
import subprocess
import time
import urllib.error
import urllib.request



ELEMENT = "element-6066-11e4-a52e-4f735466cecf"  # the W3C key of an element reference
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--window-size=1300,1000"]


class Browser:
    """The few WebDriver commands the tests need, over HTTP to a chromedriver we start ourselves."""

    def __init__(self, chromedriver, chromium, profile_dir):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        self.process = subprocess.Popen([chromedriver, f"--port={port}"], stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL)
        self.base = f"http://127.0.0.1:{port}"
        deadline = time.time() + 20
        while True:
            try:
                if self._request("GET", "/status").get("ready"):
                    break
            except (urllib.error.URLError, ConnectionError):
                pass
            if time.time() > deadline:
                self.process.kill()
                raise RuntimeError("chromedriver did not start within 20 s")
            time.sleep(0.1)
        options = {"binary": chromium, "args": CHROMIUM_ARGS + [f"--user-data-dir={profile_dir}"]}
        caps = {"capabilities": {"alwaysMatch": {"browserName": "chrome", "goog:chromeOptions": options,
                                                 "goog:loggingPrefs": {"browser": "ALL"}}}}
        self.session = f"/session/{self._request('POST', '/session', caps)['sessionId']}"

    def _request(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base + path, data=data, method=method,
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return json.loads(response.read())["value"]
        except urllib.error.HTTPError as e:
            raise AssertionError(f"WebDriver {method} {path} failed: {e.read()[:500]!r}") from None

    def command(self, method, path, body=None):
        return self._request(method, self.session + path, body)

    def get(self, url):
        self.command("POST", "/url", {"url": url})

    def set_window_size(self, width, height):
        self.command("POST", "/window/rect", {"width": width, "height": height})

    def run_js(self, script, *args):
        return self.command("POST", "/execute/sync", {"script": script, "args": list(args)})

    def find(self, css):
        return self.command("POST", "/element", {"using": "css selector", "value": css})[ELEMENT]

    def click(self, css):
        self.command("POST", f"/element/{self.find(css)}/click", {})

    def hover(self, css):
        """Move the mouse onto the element's centre (a real pointer event: mouseenter fires)."""
        move = {"type": "pointerMove", "duration": 0, "origin": {ELEMENT: self.find(css)}, "x": 0, "y": 0}
        self.command("POST", "/actions", {"actions": [
            {"type": "pointer", "id": "mouse", "parameters": {"pointerType": "mouse"}, "actions": [move]}]})

    def wait_for(self, script, timeout=10.0):
        deadline = time.time() + timeout
        while time.time() < deadline:
            value = self.run_js(script)
            if value:
                return value
            time.sleep(0.05)
        raise AssertionError(f"timed out waiting for: {script}")

    def console_errors(self):
        """Browser log entries at SEVERE level (uncaught exceptions, console.error, failed loads)."""
        return [e for e in self.command("POST", "/se/log", {"type": "browser"}) if e.get("level") == "SEVERE"]

    def screenshot(self, path):
        path.write_bytes(base64.b64decode(self.command("GET", "/screenshot")))
        return path

    def quit(self):
        try:
            self._request("DELETE", self.session)
        finally:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
