#!/usr/bin/env bash
# Headless Chromium for the report tests (tests/test_report_browser.py): Debian's package, installed
# when missing and when this user may install packages; otherwise those tests skip and say why.
set -uo pipefail
if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  (apt-get install -y -qq chromium >/dev/null 2>&1 || (apt-get update -qq >/dev/null 2>&1 && \
    apt-get install -y -qq chromium >/dev/null 2>&1)) && exit 0
fi
echo "chromium not installed: the browser tests will skip" >&2
exit 0
