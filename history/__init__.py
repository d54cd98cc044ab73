"""The chats kept in a database: its schema, Chainlit's data layer on it, and the writes while a chat runs."""
