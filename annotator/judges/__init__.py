"""The LLM-judge feature: templates, providers, runs, imports, calibration and validation, with their layers inside."""
