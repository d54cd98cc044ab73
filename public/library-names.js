// Typing @ in the message box offers the names of the user's library documents (Chainlit 2.12's box suggests only
// its "/" commands). While the word at the caret starts with "@", a list above the box shows the names that hold
// what follows the "@" (names that start with it first), from GET /library/names (web/library_names.py), asked
// again when the last answer is more than a few seconds old. A click, Enter or Tab puts `@name ` in the word's
// place (`@"name" ` when the name has a space: ui/library.py reads both); arrows move, Escape closes. While the
// list is open Enter picks a name instead of sending. React owns the box's value: it is set through the native
// setter and announced with an input event, as typing would be.
(() => {
  const FRESH_MS = 5000;
  const MOST = 8;
  const AT_WORD = /(?:^|\s)@(?:"([^"]*)|([^\s"]*))$/;
  let names = [], fetchedAt = 0, asking = null;
  let list = null, shown = [], chosen = 0, word = null, closedFor = null;

  const box = () => document.getElementById("chat-input");

  function ask() {
    if (asking || Date.now() - fetchedAt < FRESH_MS) return;
    asking = fetch("/library/names", { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then((answer) => (answer.ok ? answer.json() : []))
      .then((found) => { names = Array.isArray(found) ? found.filter((n) => typeof n === "string") : []; })
      .catch(() => { names = []; })
      .finally(() => { fetchedAt = Date.now(); asking = null; update(); });
  }

  // The "@" word before the caret: where it starts, where it ends (the caret's word runs on past it), what it asks.
  function atWord(input) {
    if (input.selectionStart !== input.selectionEnd) return null;
    const before = input.value.slice(0, input.selectionStart);
    const match = AT_WORD.exec(before);
    if (!match) return null;
    const start = match.index + match[0].indexOf("@");
    const after = /^[^\s]*/.exec(input.value.slice(input.selectionStart))[0];
    return { start, end: input.selectionStart + after.length, query: (match[1] ?? match[2] ?? "").toLowerCase() };
  }

  function matching(query) {
    const starts = names.filter((n) => n.toLowerCase().startsWith(query));
    const holds = names.filter((n) => !starts.includes(n) && n.toLowerCase().includes(query));
    return [...starts, ...holds].slice(0, MOST);
  }

  function close() {
    if (list) list.remove();
    list = null; shown = []; word = null;
  }

  function place() {
    const composer = document.getElementById("message-composer") || box();
    if (!list || !composer) return;
    const edge = composer.getBoundingClientRect();
    list.style.left = `${Math.max(8, edge.left)}px`;
    list.style.bottom = `${window.innerHeight - edge.top + 6}px`;
    list.style.maxWidth = `${Math.max(160, Math.min(edge.width, window.innerWidth - 16))}px`;
  }

  function draw() {
    if (!list) {
      list = document.createElement("div");
      list.id = "library-names";
      list.setAttribute("role", "listbox");
      list.addEventListener("mousedown", (event) => event.preventDefault()); // the box keeps the focus
      list.addEventListener("click", (event) => {
        const item = event.target.closest("[data-index]");
        if (item) pick(Number(item.dataset.index));
      });
      document.body.appendChild(list);
    }
    list.replaceChildren(...shown.map((name, index) => {
      const item = document.createElement("div");
      item.className = "library-name";
      item.setAttribute("role", "option");
      item.setAttribute("aria-selected", String(index === chosen));
      item.dataset.index = String(index);
      item.textContent = "@" + name;
      item.title = name;
      return item;
    }));
    place();
    const current = list.children[chosen];
    if (current) current.scrollIntoView({ block: "nearest" });
  }

  function update() {
    const input = box();
    const found = input && document.activeElement === input ? atWord(input) : null;
    const key = found && `${found.start}:${input.value.slice(found.start, found.end)}`;
    if (!found || key === closedFor) return close();
    closedFor = null;
    ask();
    const now = matching(found.query);
    if (!now.length) return close();
    if (!word || word.start !== found.start || now.join("\n") !== shown.join("\n")) chosen = 0;
    word = found; shown = now;
    draw();
  }

  function pick(index) {
    const input = box(), name = shown[index];
    if (!input || !word || name === undefined) return;
    const text = (/\s/.test(name) && !name.includes('"') ? `@"${name}"` : "@" + name) + " ";
    const rest = input.value.slice(word.end).replace(/^ /, "");
    const value = input.value.slice(0, word.start) + text + rest;
    const caret = word.start + text.length;
    close();
    Object.getOwnPropertyDescriptor(HTMLTextAreaElement.prototype, "value").set.call(input, value);
    input.dispatchEvent(new Event("input", { bubbles: true }));
    input.setSelectionRange(caret, caret);
    requestAnimationFrame(() => { const now = box(); if (now) now.setSelectionRange(caret, caret); });
  }

  // On the window, in capture: ahead of React's own handler, which sends the message on Enter.
  window.addEventListener("keydown", (event) => {
    if (!list || event.target !== box() || event.isComposing || event.keyCode === 229) return;
    const keys = {
      ArrowDown: () => { chosen = (chosen + 1) % shown.length; draw(); },
      ArrowUp: () => { chosen = (chosen - 1 + shown.length) % shown.length; draw(); },
      Enter: () => pick(chosen),
      Tab: () => pick(chosen),
      Escape: () => {
        const input = box();
        closedFor = `${word.start}:${input.value.slice(word.start, word.end)}`;
        close();
      },
    };
    if (!keys[event.key] || event.shiftKey || event.altKey || event.ctrlKey || event.metaKey) return;
    event.preventDefault();
    event.stopImmediatePropagation();
    keys[event.key]();
  }, true);

  document.addEventListener("input", (event) => { if (event.target === box()) update(); }, true);
  document.addEventListener("selectionchange", () => { if (list || document.activeElement === box()) update(); });
  document.addEventListener("click", () => { if (list) setTimeout(update, 0); }, true); // Send empties the box
  document.addEventListener("focusout", (event) => { if (event.target === box()) setTimeout(update, 0); }, true);
  window.addEventListener("resize", place);
})();
