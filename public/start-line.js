// The engine's start seen from the first visit: while it starts or wakes, a line just above the message box tells
// its progress (GET /engine/start, web/start_route.py, in the browser's language), with nothing written in the
// chat, so the welcome page and its starters stay. The page asks every second while a start is under way and every
// ten seconds otherwise (a preset switch or a wake can begin one later), only while it is shown.
const LINE_ID = "engine-start-line";

function place(shown) {
  const composer = document.getElementById("message-composer") || document.getElementById("chat-input");
  shown.style.visibility = composer ? "visible" : "hidden";  // shown once the box it stands by is there
  if (!composer) return;
  const edge = composer.getBoundingClientRect();
  shown.style.left = `${Math.max(8, edge.left)}px`;
  shown.style.bottom = `${window.innerHeight - edge.top + 6}px`;
  shown.style.maxWidth = `${Math.max(160, Math.min(edge.width, window.innerWidth - 16))}px`;
}

function show(line) {
  let shown = document.getElementById(LINE_ID);
  if (!line) {
    if (shown) shown.remove();
    return;
  }
  if (!shown) {
    shown = document.createElement("div");
    shown.id = LINE_ID;
    shown.setAttribute("role", "status");
    document.body.appendChild(shown);
    // the box moves (the first message sends it down): follow it while the line is shown
    const following = setInterval(() => (shown.isConnected ? place(shown) : clearInterval(following)), 200);
  }
  shown.textContent = line;
  place(shown);
}

async function ask() {
  let next = 10000;
  if (document.visibilityState === "visible") {
    try {
      const answer = await fetch("/engine/start", { credentials: "same-origin", cache: "no-store" });
      if (answer.ok) {
        const { line } = await answer.json();
        show(line);
        if (line) next = 1000;
      }
    } catch (error) {
      // the server is restarting: ask again later
    }
  }
  setTimeout(ask, next);
}

window.addEventListener("resize", () => {
  const shown = document.getElementById(LINE_ID);
  if (shown) place(shown);
});
ask();
