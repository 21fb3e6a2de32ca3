"""A batch published as a Hugging Face dataset folder: parquet per config and a dataset card (docs/hf.md)."""
