"""The judge providers, listed in ``JUDGE_PROVIDERS``: the command, the web form and the job all build
their client through ``client_for``, so a provider joins the app by one line here."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from annotator.judges.engine.client import ChatClient
from annotator.judges.engine.options import CLIENT_OPTIONS, DEFAULT_PROVIDER, RunOptions
from annotator.judges.providers.anthropic import DEFAULT_BASE_URL as ANTHROPIC_URL
from annotator.judges.providers.anthropic import AnthropicClient
from annotator.judges.providers.batches import AnthropicBatches, OpenAIBatches
from annotator.judges.providers.openai import OpenAIClient

# What a client is built with unless the params name it: the run options' defaults.
DEFAULTS: dict[str, Any] = {name: getattr(RunOptions(), name) for name in CLIENT_OPTIONS}


@dataclass(frozen=True)
class Provider:
    name: str
    label: str
    client: type[ChatClient]
    key_env: str  # the variable its key is read from unless another is named
    batches: type  # its batch API (--batch)
    base_url: str = ""  # used when none is given; empty: a base URL is required
    # A local server speaking its API (vLLM, Ollama) runs without a key: a run with none is not refused
    # unless the endpoint is one of ``hosts_needing_key``.
    key_optional: bool = False
    hosts_needing_key: tuple[str, ...] = ()

    def needs_key(self, base_url: str) -> bool:
        """Whether a run against ``base_url`` must have a key before its first call."""
        return not self.key_optional or any(host in (base_url or "") for host in self.hosts_needing_key)


JUDGE_PROVIDERS: dict[str, Provider] = {
    "openai": Provider(
        "openai",
        "OpenAI-compatible chat completions",
        OpenAIClient,
        "OPENAI_API_KEY",
        OpenAIBatches,
        key_optional=True,
        hosts_needing_key=("api.openai.com",),
    ),
    "anthropic": Provider(
        "anthropic",
        "Anthropic Messages API",
        AnthropicClient,
        "ANTHROPIC_API_KEY",
        AnthropicBatches,
        ANTHROPIC_URL,
    ),
}


class UnknownProvider(ValueError):
    pass


def provider_named(name: str | None) -> Provider:
    """The registered provider ``name`` (``openai`` when empty); UnknownProvider names the known ones."""
    name = (name or DEFAULT_PROVIDER).strip()
    if name not in JUDGE_PROVIDERS:
        raise UnknownProvider(
            f"there is no judge provider \u201c{name}\u201d; known providers: {', '.join(JUDGE_PROVIDERS)}"
        )
    return JUDGE_PROVIDERS[name]


def client_for(params: dict[str, Any], *, api_key: str = "") -> ChatClient:
    """A client for ``params``: ``provider`` (default openai), ``base_url`` (the provider's default when it has
    one), ``model`` and any of DEFAULTS' keys; other keys are ignored. Raises UnknownProvider."""
    provider = provider_named(params.get("provider"))
    chosen = {k: params[k] if params.get(k) is not None else v for k, v in DEFAULTS.items()}
    base_url = params.get("base_url") or provider.base_url
    return provider.client(base_url=base_url, model=params["model"], api_key=api_key, **chosen)


def batches_for(client: ChatClient):
    """The batch API of ``client``'s provider."""
    return JUDGE_PROVIDERS[client.provider].batches(client)
