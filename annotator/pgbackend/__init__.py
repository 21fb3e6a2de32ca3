"""Django's PostgreSQL backend with a client-side deadline on every call (``annotator.db_deadline``)."""
