"""OpenAI-compatible chat completions (OpenAI, vLLM, Ollama, Together, ...): the engine's ``ChatClient``."""

from annotator.judges.engine.client import ChatClient as OpenAIClient

__all__ = ["OpenAIClient"]
