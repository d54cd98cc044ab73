// A file the upload refuses is said briefly, in the page's language. Chainlit 2.12's upload (react-dropzone) shows
// its own English in a toast: "File type must be one of text/*, application/json, ..." with every one of the ~80
// types the app accepts, or "File is larger than 20 MB". Such a toast's title is replaced by the page's own words,
// from Chainlit's translations in the page's language (.chainlit/translations, chat.fileUpload.errors: wrongType,
// wrongTypeJson for the Import box that takes only JSON, tooLarge), English where a language lacks them.
(() => {
  const WRONG_TYPE = /^File type must be (?:one of )?(.*)$/;
  const TOO_LARGE = /^File is larger than (\d+(?:\.\d+)?) MB$/;
  let words = null;

  const translations = (language) =>
    fetch(`/project/translations?language=${encodeURIComponent(language)}`, { credentials: "same-origin" })
      .then((answer) => (answer.ok ? answer.json() : {}))
      .then((said) => ((((said || {}).translation || {}).chat || {}).fileUpload || {}).errors || {});

  const pageWords = () => {
    words = words || Promise.all([translations(navigator.language || "en-US"), translations("en-US")])
      .then(([own, english]) => ({ ...english, ...own }))
      .catch(() => { words = null; return {}; });
    return words;
  };

  const reword = (title) => {
    const said = title.textContent;
    const wrong = WRONG_TYPE.exec(said), large = TOO_LARGE.exec(said);
    if (!wrong && !large) return;
    pageWords().then((errors) => {
      if (title.textContent !== said) return;
      const onlyJson = wrong && wrong[1].split(/,\s*/).every((type) => /json|^\.jsonl?$/.test(type));
      const text = large ? errors.tooLarge && errors.tooLarge.replace("{{size}}", large[1])
        : errors[onlyJson ? "wrongTypeJson" : "wrongType"];
      if (text) title.textContent = text;
    });
  };

  new MutationObserver(() => {
    document.querySelectorAll("[data-sonner-toast] [data-title]").forEach(reword);
  }).observe(document.body, { childList: true, subtree: true, characterData: true });
})();
