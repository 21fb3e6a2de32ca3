"""Prolific services: the review, the bonus ledger, the webhook."""
