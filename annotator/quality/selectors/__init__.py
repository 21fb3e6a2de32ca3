"""Reads for quality control."""
