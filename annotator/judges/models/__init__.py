"""Judge models; the app re-exports them from ``annotator.models`` (app label ``annotator``, so moves need no migration)."""
