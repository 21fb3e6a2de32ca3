"""Quality-control pages: excluding an annotator, adjudication."""
