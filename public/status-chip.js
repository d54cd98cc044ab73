// The chips that need nothing typed act at once: Chainlit's command buttons only select a command, and the user had
// to press Send as well. When a click leaves such a chip selected, press Send for the user (whatever was typed or
// attached beside it is sent too, and the app answers both). Import and Library with nothing attached answer with
// an upload box in the chat (ui/file_ask.py); Keys lists the keys with New key and Revoke buttons (a name typed
// before the chip is pressed, `new NAME`, goes with it).
// The chip shows it is selected after React's next render, which a busy page can delay: look for up to two seconds.
// A chip is named in the chat's language (ui/words/chat.py, ui/words/team.py): English or Chinese.
const AT_ONCE = ["Status", "Export", "Import", "Library", "Keys", "Usage",
                 "状态", "导出", "导入", "文档库", "密钥", "用量"];
document.addEventListener("click", (event) => {
  const chip = event.target.closest && event.target.closest(AT_ONCE.map((name) => `[id="command-${name}"]`).join(", "));
  if (!chip) return;
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
}, true);
