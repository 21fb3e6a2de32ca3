"""The annotator's pages (queue, rating) and the admin's assignment page."""
