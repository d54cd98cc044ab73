// A file the upload refuses is said briefly, in the page's language. Chainlit 2.12's upload (react-dropzone) shows
// its own English in a toast: "File type must be one of text/*, application/json, ..." with every one of the ~80
// types the app accepts, "File is larger than 1 MB", or "Too many files". Such a toast's title is replaced by the
// page's own words, from Chainlit's translations in the page's language (.chainlit/translations,
// chat.fileUpload.errors: wrongType, wrongTypeJson for the Import box that takes only JSON, tooLarge, tooMany with
// the most files a message takes, from /project/settings), English where a language lacks them.
(() => {
  const WRONG_TYPE = /^File type must be (?:one of )?(.*)$/;
  const TOO_LARGE = /^File is larger than (\d+(?:\.\d+)?) MB$/;
  const TOO_MANY = /^Too many files$/;
  let words = null;

  const translations = (language) =>
    fetch(`/project/translations?language=${encodeURIComponent(language)}`, { credentials: "same-origin" })
      .then((answer) => (answer.ok ? answer.json() : {}))
      .then((said) => ((((said || {}).translation || {}).chat || {}).fileUpload || {}).errors || {});

  const mostFiles = () =>
    fetch("/project/settings", { credentials: "same-origin" })
      .then((answer) => (answer.ok ? answer.json() : {}))
      .then((said) => (((said || {}).features || {}).spontaneous_file_upload || {}).max_files || "")
      .catch(() => "");

  let loaded = null;  // the words once fetched: a toast is then reworded as it appears, before it is painted
  const pageWords = () => {
    words = words || Promise.all([translations(navigator.language || "en-US"), translations("en-US"), mostFiles()])
      .then(([own, english, most]) => {
        const found = { ...english, ...own, most };
        if (found.tooLarge && most) loaded = found;  // all there: kept (before a sign-in they may not be)
        else words = null;  // asked again at the next refusal
        return found;
      })
      .catch(() => { words = null; return {}; });
    return words;
  };

  const rewordWith = (title, said, errors) => {
    if (title.textContent !== said) return;
    const wrong = WRONG_TYPE.exec(said), large = TOO_LARGE.exec(said);
    const onlyJson = wrong && wrong[1].split(/,\s*/).every((type) => /json|^\.jsonl?$/.test(type));
    const text = large ? errors.tooLarge && errors.tooLarge.replace("{{size}}", large[1])
      : TOO_MANY.test(said) ? errors.most && errors.tooMany && errors.tooMany.replace("{{most}}", errors.most)
      : errors[onlyJson ? "wrongTypeJson" : "wrongType"];
    if (text) title.textContent = text;
  };

  const reword = (title) => {
    const said = title.textContent;
    if (!WRONG_TYPE.test(said) && !TOO_LARGE.test(said) && !TOO_MANY.test(said)) return;
    if (loaded) rewordWith(title, said, loaded);
    else pageWords().then((errors) => rewordWith(title, said, errors));
  };

  pageWords();  // asked when the page opens, so the first refusal is already in the page's words

  new MutationObserver(() => {
    document.querySelectorAll("[data-sonner-toast] [data-title]").forEach(reword);
  }).observe(document.body, { childList: true, subtree: true, characterData: true });
})();
