#!/usr/bin/env bash
# Refreshes the README's pictures (docs/chat.png, docs/history.png) from the browser test: a real Chainlit
# server, the tiny model and headless Chromium; docs/chat-tools.png shows Regenerate under a reply and
# docs/chat-export.png an export, docs/library.png a question answered from the library, docs/edit-branches.png an
# edited question's "◀ Question 2 / 2" (tests/test_branches.py). The test run alone writes its pictures to a
# temporary folder.
set -euo pipefail
cd "$(dirname "$0")/.."
CHAT_SCREENSHOT="$PWD/docs/chat.png" CHAT_SCREENSHOT_HISTORY="$PWD/docs/history.png" \
  CHAT_SCREENSHOT_TOOLS="$PWD/docs/chat-tools.png" CHAT_SCREENSHOT_LIBRARY="$PWD/docs/library.png" \
  CHAT_SCREENSHOT_BRANCHES="$PWD/docs/edit-branches.png" \
  .venv/bin/python -m pytest -q tests/test_browser.py \
  tests/test_branches.py::test_an_edit_in_the_browser_shows_2_of_2_and_switching_back_shows_the_old_reply
echo "screenshots: docs/chat.png docs/history.png docs/chat-tools.png docs/chat-export.png docs/library.png" \
  "docs/edit-branches.png"
