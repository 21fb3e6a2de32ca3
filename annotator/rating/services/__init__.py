"""Writes for rating: assignment and leases, annotations, the order of the queue."""
