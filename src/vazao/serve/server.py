"""The HTTP side of `vazao serve`: the standard library's ThreadingHTTPServer on 127.0.0.1.

Why the standard library: the page's API is a handful of JSON calls that answer in a millisecond or two,
and its one stream (a job's progress) is Server-Sent Events over a held response; a thread per request
carries both, starts in the time it takes to import, and adds no dependency to a tool whose core has five.

What it refuses, before any handler runs: a Host header other than this server's own address (DNS
rebinding), an Origin or a Sec-Fetch-Site of another site, a body without a length or above
limits.MAX_SERVE_BODY_BYTES, a POST that is not JSON (or, for a GGUF header, octet-stream). Every error
is one JSON line, `{"error": "…"}`: status 400 for what the request got wrong, 403 for a refused
origin, 404 for an unknown path; an unexpected failure is 500 with its type only (never a traceback,
a path or the environment), the traceback going to the server's own log."""

from __future__ import annotations

import json
import re
import sys
import threading
import traceback
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any
from urllib.parse import parse_qs, urlsplit

from vazao import inputs, limits
from vazao.errors import VazaoError
from vazao.serve import api
from vazao.serve.jobs import TERMINAL, Jobs

STATIC = {"index.html": "text/html; charset=utf-8", "app.js": "text/javascript; charset=utf-8",
          "app.css": "text/css; charset=utf-8"}
CSP = ("default-src 'none'; script-src 'self' 'unsafe-eval'; style-src 'self' 'unsafe-inline'; "
       "img-src 'self' data: blob:; connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'none'; "
       "frame-ancestors 'none'")  # Vega compiles its expressions with Function(): 'unsafe-eval'
JOB_PATH = re.compile(r"/api/jobs/([a-z]{3}[0-9]{1,9}-[0-9a-f]{8})(/events|/report|/cancel)?")
SSE_KEEPALIVE_S = 15.0


class Refused(Exception):
    """A request refused before its handler: (status, message)."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


class App:
    """The server's state: its address (what Host must say), the jobs, the Vega bundle once read."""

    def __init__(self, host: str, port: int, *, log: bool = False):
        self.host, self.port, self.log = host, port, log
        self.jobs = Jobs()
        self._bundle: bytes | None = None
        self._lock = threading.Lock()

    @property
    def hosts(self) -> set[str]:
        return {f"{self.host}:{self.port}", f"localhost:{self.port}"}

    def bundle(self) -> bytes:
        with self._lock:
            if self._bundle is None:
                from vazao.report.vega import javascript_bundle

                self._bundle = javascript_bundle().encode("utf-8")
            return self._bundle


def static_file(name: str) -> bytes:
    return resources.files("vazao.serve").joinpath("static").joinpath(name).read_bytes()


class Handler(BaseHTTPRequestHandler):
    server_version = "vazao-serve"
    sys_version = ""
    protocol_version = "HTTP/1.1"
    # headers and body leave in two writes: with Nagle on, the body waits for the client's delayed ACK
    # (40 ms on Linux), which alone was most of an explorer answer
    disable_nagle_algorithm = True
    app: App  # set on the subclass make_server builds

    # ---- plumbing ------------------------------------------------------------------------------
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        if self.app.log:
            sys.stderr.write(f"vazao serve: {format % args}\n")

    def _send(self, status: int, body: bytes, ctype: str, extra: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("Cross-Origin-Resource-Policy", "same-origin")
        self.send_header("Content-Security-Policy", CSP)
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, obj: Any, status: int = 200) -> None:
        text = json.dumps(obj, separators=(",", ":"), allow_nan=False, default=str)
        self._send(status, text.encode("utf-8"), "application/json")

    def _error(self, status: int, message: str) -> None:
        self.close_connection = True
        self._json({"error": message.replace("\n", " ")[:2000]}, status)

    def _check_origin(self) -> None:
        """Host must be this server's own address; a browser's Origin (when it sends one) and
        Sec-Fetch-Site must be this page's."""
        host = self.headers.get("Host", "")
        if host not in self.app.hosts:
            raise Refused(403, "this server answers only to its own address (Host header refused)")
        origin = self.headers.get("Origin")
        if origin is not None and origin not in {f"http://{h}" for h in self.app.hosts}:
            raise Refused(403, "requests from other origins are refused")
        site = self.headers.get("Sec-Fetch-Site")
        if site is not None and site not in ("same-origin", "none"):
            raise Refused(403, f"a {site} request is refused")

    def _body(self, *, binary: bool = False) -> Any:
        ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        want = "application/octet-stream" if binary else "application/json"
        if ctype != want:
            raise Refused(400, f"expected Content-Type {want}, got {ctype or 'none'}")
        if self.headers.get("Transfer-Encoding"):
            raise Refused(400, "a chunked body is refused; send Content-Length")
        length = self.headers.get("Content-Length")
        if length is None:
            raise Refused(400, "Content-Length is required")
        try:
            n = int(inputs.number(length, "Content-Length", minimum=0, maximum=limits.MAX_SERVE_BODY_BYTES,
                                  integer=True))
        except VazaoError as exc:
            raise Refused(400, str(exc)) from None
        data = self.rfile.read(n)
        if binary:
            return data
        try:
            body = inputs.loads_json(inputs.decode(data, "request body"), "request body")
        except VazaoError as exc:
            raise Refused(400, str(exc)) from None
        if not isinstance(body, dict):
            raise Refused(400, "request body: expected a JSON object")
        return body

    def _run(self, fn: Callable[[], None]) -> None:
        try:
            self._check_origin()
            fn()
        except Refused as exc:
            self._error(exc.status, str(exc))
        except VazaoError as exc:
            self._error(400, str(exc))
        except KeyError:
            self._error(404, "no such job (finished jobs are kept for a while, then dropped)")
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        except Exception as exc:  # noqa: BLE001 - the page gets one line; the log gets the traceback
            traceback.print_exc(file=sys.stderr)
            self._error(500, f"internal error ({type(exc).__name__}); see the server's log")

    # ---- methods -------------------------------------------------------------------------------
    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self._run(self._get)

    def do_HEAD(self) -> None:  # noqa: N802
        self._run(self._get)

    def do_POST(self) -> None:  # noqa: N802
        self._run(self._post)

    def _refuse_method(self) -> None:
        self._run(lambda: (_ for _ in ()).throw(Refused(405, f"{self.command} is not allowed")))

    do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _refuse_method  # noqa: N815

    def _get(self) -> None:
        url = urlsplit(self.path)
        path = url.path
        if path in ("/", "/index.html"):
            self._send(200, static_file("index.html"), STATIC["index.html"])
        elif path == "/static/vega.js":
            self._send(200, self.app.bundle(), "text/javascript; charset=utf-8")
        elif path.startswith("/static/") and path[8:] in STATIC:
            self._send(200, static_file(path[8:]), STATIC[path[8:]])
        elif path == "/api/catalog":
            self._json(api.catalog())
        elif m := JOB_PATH.fullmatch(path):
            job = self.app.jobs.get(m.group(1))
            if m.group(2) is None:
                self._json(job.status())
            elif m.group(2) == "/events":
                self._events(job)
            elif m.group(2) == "/report":
                self._job_report(job)
            else:
                raise Refused(405, "cancel is a POST")
        else:
            raise Refused(404, f"no page {path[:80]!r}")

    def _post(self) -> None:
        url = urlsplit(self.path)
        path = url.path
        if path == "/api/explore":
            self._json(api.explore(self._body()))
        elif path == "/api/explore/report":
            self._html(api.explore_report_html(self._body()), "explorer")
        elif path == "/api/model":
            query = parse_qs(url.query)
            if (self.headers.get("Content-Type") or "").startswith("application/octet-stream"):
                name = (query.get("name") or ["uploaded.gguf"])[0]
                size = query.get("size")
                self._json(api.model_from_gguf(self._body(binary=True), name, size[0] if size else None))
            else:
                self._json(api.model_from_config(self._body()))
        elif path in ("/api/simulate", "/api/plan"):
            from vazao.serve.jobs import check_plan, check_simulate

            body = self._body()
            kind = "simulation" if path == "/api/simulate" else "plan"
            (check_simulate if kind == "simulation" else check_plan)(body)
            job = self.app.jobs.start(kind, body)
            self._json(job.status(with_result=False), 202)
        elif path in ("/api/compare", "/api/compare/report"):
            body = self._body()
            latest = self.app.jobs.latest("simulation")
            predicted = latest.result["document"] if latest is not None and latest.result else None
            if path == "/api/compare":
                self._json(api.compare(body, predicted))
            else:
                self._html(api.compare_report_html(body, predicted), "comparison")
        elif m := JOB_PATH.fullmatch(path):
            if m.group(2) != "/cancel":
                raise Refused(405, "only /cancel is a POST")
            self._body()  # an empty JSON object: a form elsewhere cannot post it
            job = self.app.jobs.get(m.group(1))
            self.app.jobs.cancel(job)
            self._json(job.status(with_result=False))
        else:
            raise Refused(404, f"no endpoint {path[:80]!r}")

    # ---- answers -------------------------------------------------------------------------------
    def _html(self, page: str, name: str) -> None:
        self._send(200, page.encode("utf-8"), "text/html; charset=utf-8",
                   {"Content-Disposition": f'attachment; filename="vazao-{name}-report.html"'})

    def _job_report(self, job: Any) -> None:
        if job.state != "done" or not job.result or job.result.get("view") is None:
            raise VazaoError(f"the {job.kind} has no result to report ({job.state})")
        from vazao.report.html import render_report

        if job.kind == "simulation":
            from vazao.report.reports import simulation_report

            report = simulation_report(job.result["document"])
        else:
            from vazao.report.plan_report import plan_report

            report = plan_report(job.result["document"])
        self._html(render_report(report), job.kind)

    def _events(self, job: Any) -> None:
        """Server-Sent Events: one `progress` event per change, then `end` with the job's state."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.end_headers()
        self.close_connection = True
        version = -1
        while True:
            status = job.status(with_result=False)
            if status["version"] != version:
                version = status["version"]
                event = "end" if status["state"] in TERMINAL else "progress"
                self.wfile.write(f"event: {event}\ndata: {json.dumps(status)}\n\n".encode())
                self.wfile.flush()
                if event == "end":
                    return
            else:
                self.wfile.write(b": keepalive\n\n")
                self.wfile.flush()
            job.wait_change(version, SSE_KEEPALIVE_S)


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    app: App


def make_server(port: int = 0, *, log: bool = False) -> Server:
    """A server on 127.0.0.1:port (0: a free port); `server.app.port` is the port it got. Only the
    loopback: the page has no accounts, so it is never offered to another machine."""
    port = int(inputs.number(port, "port", minimum=0, maximum=65535, integer=True))
    app = App("127.0.0.1", 0, log=log)
    handler = type("BoundHandler", (Handler,), {"app": app})
    try:
        server = Server((app.host, port), handler)
    except OSError as exc:
        raise VazaoError(f"cannot listen on 127.0.0.1:{port}: {exc.strerror or exc}") from None
    app.port = server.server_address[1]
    server.app = app
    return server


def url_of(server: Server) -> str:
    return f"http://{server.app.host}:{server.app.port}/"


def serve(server: Server) -> None:
    """Serve until interrupted; running jobs are cancelled on the way out."""
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        server.app.jobs.close()
        server.server_close()
