"""Running an LLM judge over a batch: templates, an OpenAI-compatible chat client, a bounded-concurrency runner."""
