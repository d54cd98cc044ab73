// On this machine (the server listens on loopback) the page signs in as the one local user by itself (web/signin.py),
// so Chainlit's Logout would lead straight back in as the same user. The user menu, which holds only that name and
// Logout, is hidden for the local user; anyone signed in with a password keeps it.
const LOCAL_PROVIDER = "local"; // ui/who.py's LOCAL_PROVIDER, in the user's metadata

async function hideMenuOfLocalUser() {
  for (let tries = 0; tries < 300; tries += 1) { // until the page has signed in (it answers 401 before)
    try {
      const response = await fetch("/user", { credentials: "same-origin" });
      if (response.ok) {
        const user = await response.json();
        if (user && user.metadata && user.metadata.provider === LOCAL_PROVIDER) {
          const style = document.createElement("style");
          style.textContent = "#user-nav-button { display: none !important; }";
          document.head.appendChild(style);
        }
        return;
      }
    } catch (error) {
      // the server is not answering yet (starting, or restarting): ask again
    }
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}

hideMenuOfLocalUser();
