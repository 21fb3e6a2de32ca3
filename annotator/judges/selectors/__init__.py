"""Reads of judge data: calibration sections, cards, probes, disagreements, the judge list."""
