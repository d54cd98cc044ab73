"""The one door to Chainlit beyond its public `cl.` API: its patches, its sessions and sockets, who is signed in,
its data layer. Imports nothing of the project but lifetime/, so app.py can import it before the engine."""
