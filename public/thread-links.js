// A link in the chat to one of this app's chats (an import's "open it") opens it in this tab: Chainlit opens every
// link of a message in a new tab, where the imported chat stood alone and this tab's history did not list it until
// a reload. A full load of the chat's address lists it at once and opens it as the history does. A click with a
// modifier key (or the middle button) still opens a new tab, as the user asked for one.
document.addEventListener("click", (event) => {
  const link = event.target.closest && event.target.closest("a[href]");
  if (!link || event.button !== 0 || event.ctrlKey || event.metaKey || event.shiftKey || event.altKey) return;
  const target = new URL(link.href, window.location.href);
  if (target.origin !== window.location.origin || !target.pathname.startsWith("/thread/")) return;
  event.preventDefault();
  event.stopPropagation();
  window.location.assign(target.href);
}, true);
