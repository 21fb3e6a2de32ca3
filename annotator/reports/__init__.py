"""A batch's report, in one home: computing it, storing it per revision, the page, every export format and the Hugging Face dataset."""
