"""Reads for the report: the arrays, the statistics, stored reports, the page's parts and row-level reads."""
