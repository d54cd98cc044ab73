"""What the chat shows: sidebar widgets and the text of progress, stats and status. Never imports vllm."""
