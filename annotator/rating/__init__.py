"""Rating, in one home: the queue, leases, submit, skip, edit and progress."""
