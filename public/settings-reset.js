// The settings panel's Reset brings the defaults back. Chainlit's own Reset only puts back the values the panel had
// when it was opened (the ones in use, so it seemed to do nothing); after it, the server is asked to reset this
// chat (POST /settings/reset, web/settings_route.py): it applies the defaults, sends the panel its new values and
// says so in the chat. The Reset button is the first of the panel's footer, beside its Confirm (#confirm-sidebar).
document.addEventListener("click", (event) => {
  const button = event.target.closest && event.target.closest("button");
  const footer = button && button.parentElement;
  if (!footer || !footer.querySelector("#confirm-sidebar") || footer.querySelector("button") !== button) return;
  setTimeout(() => {
    fetch("/settings/reset", { method: "POST", credentials: "same-origin" }).catch(() => {});
  }, 0);
}, true);
