"""Upload a written dataset folder to the Hugging Face Hub with ``huggingface_hub``.

The token is the one ``huggingface_hub`` finds itself (``HF_TOKEN``, or ``huggingface-cli login``);
``HF_ENDPOINT`` points at another Hub (a mirror, or the tests' local stub). A new repository is
made private: the researcher makes it public on the Hub once the card's licence is filled in.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO_ID = re.compile(r"^(?:[A-Za-z0-9][A-Za-z0-9._-]{0,95}/)?[A-Za-z0-9][A-Za-z0-9._-]{0,95}$")
DEFAULT_ENDPOINT = "https://huggingface.co"


class HubRefused(ValueError):
    """The upload cannot start (no token, a malformed repository name); the message says what to do."""


@dataclass(frozen=True)
class HubTarget:
    repo: str
    token: str = ""
    endpoint: str = DEFAULT_ENDPOINT

    def __repr__(self) -> str:  # never the token, in a traceback or a log
        return f"HubTarget(repo={self.repo!r}, endpoint={self.endpoint!r})"


def hub_target(repo: str) -> HubTarget:
    """Check the repository name and find the token before any work is done."""
    if not REPO_ID.match(repo or "") or ".." in repo or repo.endswith((".git", ".")):
        raise HubRefused(
            f"{repo!r} is not a Hub repository name: use owner/name (letters, digits, '-', '_', '.')"
        )
    from huggingface_hub import get_token

    token = get_token()
    if not token:
        raise HubRefused(
            "no Hugging Face token is set: set HF_TOKEN (a token with write access) or run "
            "huggingface-cli login, then run the command again"
        )
    endpoint = (os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")
    return HubTarget(repo=repo, token=token, endpoint=endpoint)


def dataset_push(*, folder: str | Path, target: HubTarget, api: Any = None) -> str:
    """Create the dataset repository if needed (private) and upload the folder in one commit.
    Returns the dataset's URL. ``api`` is an ``HfApi`` (made from ``target`` when not given)."""
    if api is None:
        from huggingface_hub import HfApi

        api = HfApi(endpoint=target.endpoint, token=target.token)
    api.create_repo(target.repo, repo_type="dataset", private=True, exist_ok=True)
    api.upload_folder(
        folder_path=str(folder),
        repo_id=target.repo,
        repo_type="dataset",
        commit_message="Publish the study: ratings, items, judge outputs and the dataset card",
    )
    return f"{target.endpoint}/datasets/{target.repo}"
