"""The judge pages: the Judges page, runs, calibration sets."""
