// An open tab outlives a restart of its server. While the server is down, Chainlit's page asks it who is
// signed in, takes the failed request for a signed-out user and navigates to /login, which the browser then
// cannot load: the tab is left on an error page that never comes back, though the chat's socket would have
// reconnected by itself. Here a same-origin GET that fails because nothing answers (not one that gets an
// HTTP error) is tried again, after 1 s and then every 3 s, until the server answers or the page gives up
// the request; the page then goes on as if the server had only been slow.
(() => {
  const plainFetch = window.fetch.bind(window);
  const pause = (ms, signal) => new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    if (signal) signal.addEventListener("abort", () => { clearTimeout(timer); reject(signal.reason); }, { once: true });
  });
  const retried = (input, init) => {  // without making a Request, which would take over the caller's body
    const method = ((init && init.method) || (input instanceof Request ? input.method : "GET")).toUpperCase();
    const url = new URL(input instanceof Request ? input.url : String(input), window.location.href);
    return method === "GET" && url.origin === window.location.origin && !url.pathname.includes("/socket.io");
  };
  window.fetch = async (input, init) => {
    if (!retried(input, init)) return plainFetch(input, init);
    const signal = (init && init.signal) || (input instanceof Request ? input.signal : undefined);
    for (let attempt = 0; ; attempt++) {
      try {
        return await plainFetch(input, init);
      } catch (error) {
        if (!(error instanceof TypeError) || (signal && signal.aborted)) throw error;  // only "nothing answered"
        await pause(attempt === 0 ? 1000 : 3000, signal);
      }
    }
  };
})();
