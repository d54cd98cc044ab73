// A line of the app's just above the message box (the engine's start on the left, the context's fill on the
// right): laid over the page, following the box as it moves, gone when there is nothing to say.
export function showByBox(id, line, { right = false, warn = false } = {}) {
  let shown = document.getElementById(id);
  if (!line) {
    if (shown) shown.remove();
    return;
  }
  if (!shown) {
    shown = document.createElement("div");
    shown.id = id;
    shown.className = "by-the-box";
    shown.setAttribute("role", "status");
    document.body.appendChild(shown);
    const following = setInterval(() => (shown.isConnected ? place(shown, right) : clearInterval(following)), 200);
  }
  shown.textContent = line;
  shown.classList.toggle("warn", warn);
  place(shown, right);
}

function place(shown, right) {
  const composer = document.getElementById("message-composer") || document.getElementById("chat-input");
  shown.style.visibility = composer ? "visible" : "hidden";  // shown once the box it stands by is there
  if (!composer) return;
  const edge = composer.getBoundingClientRect();
  shown.style.bottom = `${window.innerHeight - edge.top + 6}px`;
  shown.style.maxWidth = `${Math.max(160, Math.min(edge.width, window.innerWidth - 16))}px`;
  if (right) {
    shown.style.left = "";
    shown.style.right = `${Math.max(8, window.innerWidth - edge.right)}px`;
  } else {
    shown.style.right = "";
    shown.style.left = `${Math.max(8, edge.left)}px`;
  }
}

// Ask `path` for {line, ...} every `busy` ms while it has a line, every `idle` ms otherwise, only while shown;
// `body()`, when given, is POSTed as JSON with each ask. Returns `soon()`: ask again after `settle` ms of quiet.
export function poll(path, show, busy, idle, body = null, settle = 500) {
  let timer = null;
  const ask = async () => {
    clearTimeout(timer);
    let next = idle;
    if (document.visibilityState === "visible") {
      try {
        const how = { credentials: "same-origin", cache: "no-store" };
        const answer = await fetch(path, body ? { ...how, method: "POST", body: JSON.stringify(body()),
                                                  headers: { "Content-Type": "application/json" } } : how);
        if (answer.ok) {
          const said = await answer.json();
          show(said);
          if (said.line) next = busy;
        }
      } catch (error) {
        // the server is restarting: ask again later
      }
    }
    timer = setTimeout(ask, next);
  };
  ask();
  return () => {
    clearTimeout(timer);
    timer = setTimeout(ask, settle);
  };
}
