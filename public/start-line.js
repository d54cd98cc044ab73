// The engine's start seen from the first visit: while it starts or wakes, a line just above the message box tells
// its progress (GET /engine/start, web/start_route.py, in the browser's language), with nothing written in the
// chat, so the welcome page and its starters stay. Asked every second while a start is under way, every ten seconds
// otherwise (a preset switch or a wake can begin one later).
import { poll, showByBox } from "/public/box-line.js";

poll("/engine/start", (said) => showByBox("engine-start-line", said.line), 1000, 10000);
