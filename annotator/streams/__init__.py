"""Streams: long-lived sources of traces, a known random sample of them rated by people, and the
judges' calibration per window of time (or of human-labelled traces). See docs/streams.md."""
