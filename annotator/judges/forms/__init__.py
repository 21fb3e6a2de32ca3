"""Forms of the judge pages."""
