"""Writes of judge data: imports, runs and their jobs, calibration sets."""
