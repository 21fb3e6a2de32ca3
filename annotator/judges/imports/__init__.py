"""Judge files: scores, pairwise verdicts and traces, parsed without writing."""
