"""Reads for rating: the queue, a batch's facts, progress and the admin's view of assignment."""
