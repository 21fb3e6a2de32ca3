"""Uploads, in one home: reading and checking files, the preview, the confirm step and the background import."""
