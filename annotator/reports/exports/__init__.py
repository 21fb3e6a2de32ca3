"""Report and annotation exports: JSON, CSV (formula-defused), self-contained HTML, SVG plots."""
