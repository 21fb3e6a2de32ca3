"""Writes for the report: storing a computed report, and the background job that computes one."""
