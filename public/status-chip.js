// The chips that need nothing typed act at once: Chainlit's command buttons only select a command, and the user had
// to press Send as well. When a click leaves such a chip selected, press Send for the user (whatever was typed or
// attached beside it is sent too, and the app answers both). Import and Library with nothing attached answer with
// an upload box in the chat (ui/file_ask.py); Keys lists the keys with New key and Revoke buttons (a name typed
// before the chip is pressed, `new NAME`, goes with it).
// The chip shows it is selected after React's next render, which a busy page can delay: look for up to two seconds.
// Which chips act at once, by their names in every language, comes from the app (GET /chips, declared in
// ui/chips.py); asked once signed in, and again after a failed ask.
let atOnce = null;

const chipsAtOnce = () => {
  atOnce = atOnce || fetch("/chips", { credentials: "same-origin", headers: { Accept: "application/json" } })
    .then((response) => (response.ok ? response.json() : Promise.reject(response.status)))
    .then((said) => said.at_once)
    .catch(() => {
      atOnce = null;
      return [];
    });
  return atOnce;
};

const pressSendWhenSelected = (chip) => {
  let tries = 0;
  const sendWhenSelected = () => {
    const current = document.getElementById(chip.id);
    const send = document.getElementById("chat-submit");
    if (current && current.classList.contains("text-command") && send && !send.disabled) {
      send.click();
    } else if (++tries < 40) {
      setTimeout(sendWhenSelected, 50);
    }
  };
  setTimeout(sendWhenSelected, 50);
};

document.addEventListener("click", (event) => {
  const chip = event.target.closest && event.target.closest('[id^="command-"]');
  if (!chip) return;
  chipsAtOnce().then((names) => {
    if (names.includes(chip.id.slice("command-".length))) pressSendWhenSelected(chip);
  });
}, true);

chipsAtOnce();
