"""Quality control, in one home: gold items, training, checks, exclusion, outliers, agreement over time and adjudication."""
