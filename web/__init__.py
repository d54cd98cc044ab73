"""The HTTP side of the chat server: who may talk to it, who signs in, where it listens, and the API's route."""
