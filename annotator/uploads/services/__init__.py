"""Saving what an upload's checks accepted, all or nothing."""
