"""`vazao serve`: a local web page over the library. `server` is the HTTP side (standard library
ThreadingHTTPServer, 127.0.0.1 only, Host and Origin checked, every body bounded), `api` one function
per library call (the typed results as JSON, no maths), `jobs` the simulations and plans that run in
their own processes with progress and cancellation, `static/` the page (plain modules, no build step).
The Vega bundle the page draws with is the one `vazao report` inlines (report.vega), served locally."""

from __future__ import annotations
