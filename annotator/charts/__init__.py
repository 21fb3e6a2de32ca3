"""Figures rendered server-side with matplotlib as SVG text."""
