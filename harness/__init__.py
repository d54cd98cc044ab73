"""What the tests and the benchmark both drive the app with: real servers started and stopped (`chainlit run`,
`vllm serve`, PostgreSQL, nginx, a hub mirror), a socket.io client that acts as a browser tab, and the helpers
that read replies and stored chats. It lives outside tests/ so that bench/ and scripts/ import it as a package
(from the repository root) instead of reaching into the test folder."""
