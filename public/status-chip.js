// The Status chip answers at once: Chainlit's command buttons only select a command, and the user had to
// press Send as well. When a click leaves the Status chip selected, press Send for the user (whatever was
// typed beside it is sent too, and the app answers both).
document.addEventListener("click", (event) => {
  const chip = event.target.closest && event.target.closest("#command-Status");
  if (!chip) return;
  setTimeout(() => {
    const selected = chip.classList.contains("text-command");
    const send = document.getElementById("chat-submit");
    if (selected && send && !send.disabled) send.click();
  }, 50);
}, true);
