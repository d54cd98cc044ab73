"""What lasts as long as the process, below every other package: the holder that `-w` re-imports do not replace
(runtime.py) and the background tasks kept until they end (tasks.py). Imports nothing of the project."""
