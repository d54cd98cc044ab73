"""What the chat shows: a chat's state, its replies, the sidebar, notes and notices. Never imports vllm."""
