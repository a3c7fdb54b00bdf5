"""A small Chrome DevTools Protocol driver for the browser tests: headless Chromium with every
outside connection sent to a dead proxy, one page, what it logged and what it asked the network for.
Standard library and aiohttp (installed by the dev and testing extras) only."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
import os
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp

LOCAL_SCHEMES = ("file:", "data:", "about:", "blob:", "chrome:", "devtools:")
FLAGS = ("--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
         "--disable-extensions", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", "--disable-default-apps", "--mute-audio", "--hide-scrollbars",
         # Any request that is not a local file goes to a port nothing listens on.
         "--proxy-server=127.0.0.1:9", "--proxy-bypass-list=<-loopback>", "--window-size=1280,900")


def find_chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        if path := shutil.which(name):
            return path
    return None


@dataclass
class PageResult:
    console_errors: list[str] = field(default_factory=list)
    external_requests: list[str] = field(default_factory=list)
    charts: list[dict] = field(default_factory=list)
    done: str | None = None
    screenshot: Path | None = None


JS_CHARTS = """JSON.stringify(Array.from(document.querySelectorAll('.chart')).map(function (el) {
  var svg = el.querySelector('svg'), canvas = el.querySelector('canvas');
  var box = (svg || canvas || el).getBoundingClientRect();
  return {id: el.id, drawn: el.getAttribute('data-drawn'), error: el.getAttribute('data-error'),
          svg_marks: svg ? svg.querySelectorAll('path, rect, line, circle, text').length : 0,
          canvas: !!canvas, width: box.width, height: box.height};
}))"""


class _Session:
    def __init__(self, ws):
        self.ws, self.ids, self.waiting, self.events = ws, itertools.count(1), {}, []

    async def reader(self) -> None:
        async for msg in self.ws:
            data = json.loads(msg.data)
            if "id" in data and data["id"] in self.waiting:
                self.waiting.pop(data["id"]).set_result(data)
            elif "method" in data:
                self.events.append(data)

    async def call(self, method: str, session: str | None = None, **params) -> dict:
        n = next(self.ids)
        fut = asyncio.get_running_loop().create_future()
        self.waiting[n] = fut
        msg = {"id": n, "method": method, "params": params, **({"sessionId": session} if session else {})}
        await self.ws.send_str(json.dumps(msg))
        reply = await asyncio.wait_for(fut, 30)
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        return reply.get("result", {})


def _devtools_url(profile: Path, proc: subprocess.Popen, timeout_s: float) -> str:
    port_file = profile / "DevToolsActivePort"
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"chromium exited with {proc.returncode}")
        with contextlib.suppress(OSError, ValueError):
            port, path = port_file.read_text().split("\n")[:2]
            return f"ws://127.0.0.1:{int(port)}{path}"
        time.sleep(0.1)
    raise RuntimeError("chromium did not open its DevTools port")


def _collect(events: list[dict], out: PageResult) -> None:
    for e in events:
        m, p = e["method"], e.get("params", {})
        if m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
            out.console_errors.append(" ".join(str(a.get("value", a.get("description", ""))) for a in p["args"]))
        elif m == "Runtime.exceptionThrown":
            out.console_errors.append(p["exceptionDetails"].get("exception", {}).get("description", "exception"))
        elif m == "Log.entryAdded" and p["entry"].get("level") == "error":
            out.console_errors.append(p["entry"].get("text", ""))
        elif m == "Network.requestWillBeSent" and not p["request"]["url"].startswith(LOCAL_SCHEMES):
            out.external_requests.append(p["request"]["url"])


async def _drive(url: str, page: Path, shot: Path, timeout_s: float) -> PageResult:
    out = PageResult()
    async with aiohttp.ClientSession() as http, http.ws_connect(url, max_msg_size=0) as ws:
        cdp = _Session(ws)
        reader = asyncio.create_task(cdp.reader())
        target = (await cdp.call("Target.createTarget", url="about:blank"))["targetId"]
        sid = (await cdp.call("Target.attachToTarget", targetId=target, flatten=True))["sessionId"]
        for domain in ("Runtime", "Log", "Network", "Page"):
            await cdp.call(f"{domain}.enable", sid)
        await cdp.call("Page.navigate", sid, url=page.resolve().as_uri())
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            r = await cdp.call("Runtime.evaluate", sid, expression="document.body && "
                               "document.body.getAttribute('data-charts-done')", returnByValue=True)
            out.done = r["result"].get("value")
            if out.done is not None:
                break
            await asyncio.sleep(0.2)
        await asyncio.sleep(0.3)  # let late console messages arrive
        r = await cdp.call("Runtime.evaluate", sid, expression=JS_CHARTS, returnByValue=True)
        out.charts = json.loads(r["result"]["value"])
        shot_data = await cdp.call("Page.captureScreenshot", sid, format="png", captureBeyondViewport=True)
        shot.write_bytes(base64.b64decode(shot_data["data"]))
        out.screenshot = shot
        _collect(cdp.events, out)
        reader.cancel()
    return out


def open_page(chromium: str, page: Path, workdir: Path, timeout_s: float = 60.0) -> PageResult:
    """Open `page` in headless Chromium; wait until its charts say they are done (or the timeout)."""
    profile = workdir / f"chromium-profile-{page.stem}"
    profile.mkdir(parents=True, exist_ok=True)
    (profile / "DevToolsActivePort").unlink(missing_ok=True)  # a stale one names a closed port
    proc = subprocess.Popen([chromium, *FLAGS, f"--user-data-dir={profile}", "--remote-debugging-port=0",
                             "about:blank"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, "HOME": str(workdir)})
    try:
        url = _devtools_url(profile, proc, 30)
        return asyncio.run(_drive(url, page, workdir / f"{page.stem}.png", timeout_s))
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
