"""Prolific's side of a study: approve, reject, request returns, pay bonuses exactly once, and take
webhooks. The client (``client.py``) is the only module that speaks HTTP to Prolific."""
