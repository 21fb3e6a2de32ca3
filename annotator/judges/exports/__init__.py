"""Judge exports: the judges table, the judge card, the judge tables and their export-format rows."""
