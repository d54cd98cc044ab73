// The Status chip answers at once: Chainlit's command buttons only select a command, and the user had to
// press Send as well. When a click leaves the Status chip selected, press Send for the user (whatever was
// typed beside it is sent too, and the app answers both). The chip shows it is selected after React's next
// render, which a busy page can delay: look for up to two seconds.
document.addEventListener("click", (event) => {
  const chip = event.target.closest && event.target.closest("#command-Status");
  if (!chip) return;
  let tries = 0;
  const sendWhenSelected = () => {
    const current = document.getElementById("command-Status");
    const send = document.getElementById("chat-submit");
    if (current && current.classList.contains("text-command") && send && !send.disabled) {
      send.click();
    } else if (++tries < 40) {
      setTimeout(sendWhenSelected, 50);
    }
  };
  setTimeout(sendWhenSelected, 50);
}, true);
