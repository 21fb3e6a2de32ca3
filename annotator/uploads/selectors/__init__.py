"""Read-only checks of an upload against what is stored, and its preview."""
