"""One builder of the judge client, for the ``run_judge`` command and the web run alike: the provider registry's."""

from annotator.judges.providers import DEFAULTS, JUDGE_PROVIDERS, UnknownProvider, client_for, provider_named

__all__ = ["DEFAULTS", "JUDGE_PROVIDERS", "UnknownProvider", "client_for", "provider_named"]
