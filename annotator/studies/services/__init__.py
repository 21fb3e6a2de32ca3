"""Writes of the study feature: links and enrolment."""
