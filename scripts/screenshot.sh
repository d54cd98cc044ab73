#!/usr/bin/env bash
# Refreshes the README's picture (docs/chat.png) from the browser test: a real Chainlit server,
# the tiny model and headless Chromium. The test run alone writes its picture to a temporary folder.
set -euo pipefail
cd "$(dirname "$0")/.."
CHAT_SCREENSHOT="$PWD/docs/chat.png" .venv/bin/python -m pytest -q tests/test_browser.py
echo "screenshot: docs/chat.png"
