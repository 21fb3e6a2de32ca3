"""Writes for quality control: gold items, exclusions, adjudications."""
