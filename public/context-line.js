// How full the chat's context is, in sight before the next message: "context 1,234 / 4,096 tokens" just above the
// message box on the right (GET /chat/context, web/context_route.py), marked when the next message will drop the
// oldest turns. Asked every two seconds: it changes with each reply and each preset switch.
import { poll, showByBox } from "/public/box-line.js";

poll("/chat/context", (said) => showByBox("context-line", said.line, { right: true, warn: said.full }), 2000, 2000);
