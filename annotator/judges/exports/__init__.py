"""Judge exports: the judges table and the judge card."""
