"""vazao serve: the local web page (vazao.serve): explore, simulate, plan, compare, export."""

from __future__ import annotations

import typer

from vazao.cli.app import app, console


@app.command("serve")
def serve_cmd(
    port: int = typer.Option(0, "--port", "-p", help="Port on 127.0.0.1 (default: a free one, printed)."),
    open_browser: bool = typer.Option(False, "--open", help="Open the page in the default browser."),
    log: bool = typer.Option(False, "--log", help="Log every request to stderr."),
) -> None:
    """A local web page: explore the roofline, memory, latency and cost as you change the deployment;
    simulate, plan, compare and export, offline. It listens on the loopback only (127.0.0.1), fetches
    nothing from the network and keeps nothing uploaded; Ctrl-C stops it."""
    from vazao.report.vega import vl_convert
    from vazao.serve.server import make_server, serve, url_of

    vl_convert()  # the report extra draws the page's charts: missing, one line before listening
    server = make_server(port, log=log)
    url = url_of(server)
    console.print(f"vazao serve: {url}  (Ctrl-C to stop)", highlight=False)
    if open_browser:
        import webbrowser

        webbrowser.open(url)
    try:
        serve(server)
    except KeyboardInterrupt:
        console.print("stopped", highlight=False)
