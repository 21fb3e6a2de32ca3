"""The judge routes of the HTTP API: judges, their scores and verdicts, calibration sets."""
