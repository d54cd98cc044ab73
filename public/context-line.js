// How full the chat's context is, in sight before the next message: "context 1,234 / 4,096 tokens" just above the
// message box on the right (/chat/context, web/context_route.py), with the message being written counted apart
// ("+ 560 in your message", by the model's tokenizer on the server), marked when the next message will drop the
// oldest turns. Asked every two seconds, and half a second after typing or pasting stops.
import { poll, showByBox } from "/public/box-line.js";

const box = () => document.getElementById("chat-input");
const draft = () => ({ draft: box()?.value ?? "" });
const soon = poll("/chat/context", (said) => showByBox("context-line", said.line, { right: true, warn: said.full }),
                  2000, 2000, draft);
document.addEventListener("input", (event) => { if (event.target === box()) soon(); }, true);
