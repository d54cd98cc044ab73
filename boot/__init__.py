"""What app.py runs once before its hooks: everything set up in order (wiring.py)."""
