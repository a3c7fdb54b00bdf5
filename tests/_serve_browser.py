"""A live page in headless Chromium over the DevTools protocol, for the `vazao serve` tests and bench:
real mouse clicks and key presses (Input.dispatch*), file inputs set as a user picks files, console
errors and outside requests collected, screenshots. Its websocket runs on an event loop of its own in a
thread, so tests call plain methods. Every wait is for a condition on the page, with a generous
deadline (a loaded two-core machine), never a fixed sleep."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import aiohttp

from _cdp import FLAGS, _devtools_url, _Session

# _cdp's flags send every request, loopback included, to a dead proxy (a report is a file); this page is
# served from 127.0.0.1, so the loopback alone bypasses it: anything else still goes nowhere.
SERVE_FLAGS = tuple(f for f in FLAGS if not f.startswith("--proxy-bypass-list")) + ("--proxy-bypass-list=127.0.0.1",)
KEYS = {"ArrowRight": 39, "ArrowLeft": 37, "ArrowDown": 40, "ArrowUp": 38, "Enter": 13, "Tab": 9, "End": 35,
        "Home": 36, "Backspace": 8}


class Browser:
    """One Chromium, one page (target); `events` holds everything the page logged."""

    def __init__(self, chromium: str, workdir: Path):
        self.workdir = workdir
        profile = workdir / "chromium-profile"
        profile.mkdir(parents=True, exist_ok=True)
        (profile / "DevToolsActivePort").unlink(missing_ok=True)
        self.proc = subprocess.Popen([chromium, *SERVE_FLAGS, f"--user-data-dir={profile}", "--remote-debugging-port=0",
                                      "about:blank"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     env={**os.environ, "HOME": str(workdir)})
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        try:
            self._run(self._open(_devtools_url(profile, self.proc, 60)))
        except BaseException:
            self.close()
            raise

    def _run(self, coro, timeout: float = 120.0) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    async def _open(self, url: str) -> None:
        self.http = aiohttp.ClientSession()
        self.ws = await self.http.ws_connect(url, max_msg_size=0)
        self.cdp = _Session(self.ws)
        self.reader = asyncio.ensure_future(self.cdp.reader())
        target = (await self.cdp.call("Target.createTarget", url="about:blank"))["targetId"]
        self.sid = (await self.cdp.call("Target.attachToTarget", targetId=target, flatten=True))["sessionId"]
        for domain in ("Runtime", "Log", "Network", "Page", "DOM"):
            await self.cdp.call(f"{domain}.enable", self.sid)

    def send(self, method: str, **params: Any) -> dict:
        return self._run(self.cdp.call(method, self.sid, **params))

    def browser_call(self, method: str, **params: Any) -> dict:
        return self._run(self.cdp.call(method, None, **params))

    # ---- the page ---------------------------------------------------------------------------------
    def goto(self, url: str) -> None:
        self.send("Page.navigate", url=url)
        self.wait("document.body && document.body.dataset.answered", timeout=120)

    def js(self, expression: str) -> Any:
        r = self.send("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in r:
            raise RuntimeError(f"{expression[:80]}: {r['exceptionDetails'].get('text')}")
        return r["result"].get("value")

    def wait(self, expression: str, timeout: float = 60.0) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            value = self.js(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise TimeoutError(f"waited {timeout:.0f} s for {expression}")
            time.sleep(0.05)

    def answered(self) -> int:
        return int(self.js("+(document.body.dataset.answered || 0)"))

    def after_answer(self, before: int, timeout: float = 60.0) -> None:
        """Wait until the explorer has shown an answer newer than `before` and none is pending."""
        self.wait(f"+(document.body.dataset.answered || 0) > {before} && "
                  "window.__vazao.exploreShown === window.__vazao.exploreSeq", timeout)

    # ---- a user's hands ---------------------------------------------------------------------------
    def _center(self, selector: str) -> tuple[float, float]:
        box = self.js(f"(() => {{ const e = document.querySelector({json.dumps(selector)}); "
                      "e.scrollIntoView({block: 'center'}); const r = e.getBoundingClientRect(); "
                      "return [r.left + r.width / 2, r.top + r.height / 2, r.width, r.height]; })()")
        assert box[2] > 0 and box[3] > 0, f"{selector} is not visible"
        return box[0], box[1]

    def click(self, selector: str) -> None:
        x, y = self._center(selector)
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            self.send("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left", clickCount=1)

    def key(self, name: str, times: int = 1, modifiers: int = 0) -> None:
        for _ in range(times):
            code = KEYS[name]
            self.send("Input.dispatchKeyEvent", type="rawKeyDown", key=name, code=name, windowsVirtualKeyCode=code,
                      nativeVirtualKeyCode=code, modifiers=modifiers)
            self.send("Input.dispatchKeyEvent", type="keyUp", key=name, code=name, windowsVirtualKeyCode=code,
                      nativeVirtualKeyCode=code, modifiers=modifiers)

    def type_into(self, selector: str, text: str) -> None:
        """Click the field, select what it holds (Ctrl+A) and type `text` over it."""
        self.click(selector)
        self.send("Input.dispatchKeyEvent", type="rawKeyDown", key="a", code="KeyA", windowsVirtualKeyCode=65,
                  modifiers=2)
        self.send("Input.dispatchKeyEvent", type="keyUp", key="a", code="KeyA", windowsVirtualKeyCode=65, modifiers=2)
        if not text:
            self.key("Backspace")
        for ch in text:  # one key at a time, as typed: each fires its own input event
            self.send("Input.insertText", text=ch)

    def choose(self, selector: str, value: str) -> None:
        """Pick an option of a <select> with the keyboard: focus it, arrow up or down to the option."""
        sel = json.dumps(selector)
        target = self.js(f"[...document.querySelector({sel}).options].findIndex(o => o.value === {json.dumps(value)})")
        assert target >= 0, f"{selector} has no option {value}"
        self.js(f"document.querySelector({sel}).focus()")  # as Tab reaches it; a click would open its list
        now = self.js(f"document.querySelector({sel}).selectedIndex")
        step = "ArrowDown" if target > now else "ArrowUp"
        for _ in range(abs(target - now)):
            self.key(step)
        got = self.js(f"document.querySelector({sel}).value")
        assert got == value, f"{selector}: the keyboard chose {got}, not {value}"

    def set_files(self, selector: str, paths: list[Path]) -> None:
        """As a user picks files in the dialog: the input's files are set and its change event fires."""
        root = self.send("DOM.getDocument")["root"]["nodeId"]
        node = self.send("DOM.querySelector", nodeId=root, selector=selector)["nodeId"]
        self.send("DOM.setFileInputFiles", nodeId=node, files=[str(p) for p in paths])

    def screenshot(self, path: Path) -> Path:
        data = self.send("Page.captureScreenshot", format="png", captureBeyondViewport=True)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data["data"]))
        return path

    # ---- what the page did ---------------------------------------------------------------------------
    def console_errors(self) -> list[str]:
        out = []
        for e in list(self.cdp.events):
            m, p = e["method"], e.get("params", {})
            if m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                out.append(" ".join(str(a.get("value", a.get("description", ""))) for a in p["args"]))
            elif m == "Runtime.exceptionThrown":
                out.append(p["exceptionDetails"].get("exception", {}).get("description", "exception"))
            elif m == "Log.entryAdded" and p["entry"].get("level") == "error":
                out.append(p["entry"].get("text", ""))
        return out

    def requests(self) -> list[str]:
        return [e["params"]["request"]["url"] for e in list(self.cdp.events)
                if e["method"] == "Network.requestWillBeSent"]

    def clear_events(self) -> None:
        self.cdp.events.clear()

    def close(self) -> None:
        async def shut() -> None:
            if getattr(self, "reader", None):
                self.reader.cancel()
            if getattr(self, "ws", None):
                await self.ws.close()
            if getattr(self, "http", None):
                await self.http.close()
        with contextlib.suppress(Exception):  # closing a browser that may have died already
            self._run(shut(), 30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
