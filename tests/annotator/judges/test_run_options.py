"""RunOptions: each entry point builds the same options, and a job's stored payload keeps its keys."""

from __future__ import annotations

import pytest

from annotator.judges.engine.options import RunOptions
from annotator.judges.engine.progress import Prices
from annotator.judges.management.commands.run_judge import Command

PAYLOAD_KEYS = {
    "base_url",
    "model",
    "key_env",
    "concurrency",
    "retry_failed",
    "price_in",
    "price_out",
    "calibration_set",
    "judge",
    "temperature",
    "samples",
    "pairwise",
    "baseline_system",
    "enhanced_system",
    "swap",
    "retry_unknown",
    "provider",
    "cache",
    "currency",
    "max_cost",
    "max_tokens",
}


def _form_data(**changed):
    data = {
        "provider": "anthropic",
        "base_url": "https://api.anthropic.com",
        "model": "claude",
        "key_env": "ANTHROPIC_API_KEY",
        "concurrency": 3,
        "retry_failed": True,
        "retry_unknown": False,
        "calibration_set": True,
        "judge": "J",
        "temperature": 0.5,
        "samples": 2,
        "pairwise": False,
        "baseline_system": "",
        "enhanced_system": "",
        "swap": False,
        "no_cache": True,
        "price_in": 2.5,
        "price_out": None,
        "currency": "EUR",
        "max_cost": 1.0,
        "max_tokens": 200,
    }
    return {**data, **changed}


def test_the_form_s_options_are_stored_under_the_keys_jobs_have_always_had_and_read_back():
    options = RunOptions.from_form(_form_data())
    payload = options.to_job_payload()
    assert set(payload) == PAYLOAD_KEYS
    assert payload["price_out"] == 0.0 and payload["cache"] is False and payload["currency"] == "EUR"
    assert RunOptions.from_job_payload(payload) == options
    assert options.prices == Prices(2.5, 0.0, "EUR") and options.pair is None


def test_a_payload_stored_before_later_options_existed_reads_with_their_defaults():
    old = {"base_url": "http://x/v1", "model": "m", "key_env": "K", "concurrency": 4, "retry_failed": False}
    options = RunOptions.from_job_payload({**old, "price_in": 0.0, "price_out": 0.0})
    assert (
        options.provider == "openai" and options.cache and options.samples == 1 and not options.retry_unknown
    )
    assert options.prices.currency == "USD" and options.max_cost is None and options.judge == ""


def test_the_command_s_flags_set_the_run_options_they_name():
    parsed = (
        Command()
        .create_parser("manage.py", "run_judge")
        .parse_args(
            [
                "b",
                "--model",
                "m",
                "--no-cache",
                "--no-logprobs",
                "--batch",
                "--batch-poll",
                "5",
                "--api-key-env",
                "K",
            ]
        )
    )
    options = RunOptions.from_command_options(vars(parsed))
    assert options == RunOptions(
        model="m", cache=False, logprobs=False, batch_api=True, poll_seconds=5.0, key_env="K"
    )
    defaults = RunOptions.from_command_options(
        vars(Command().create_parser("m", "run_judge").parse_args(["b"]))
    )
    assert defaults == RunOptions()


def test_the_command_names_the_price_option_at_fault():
    parsed = vars(Command().create_parser("manage.py", "run_judge").parse_args(["b", "--currency", "12"]))
    with pytest.raises(ValueError, match="^--currency: "):
        RunOptions.from_command_options(parsed)


def test_an_unknown_option_field_is_refused():
    with pytest.raises(TypeError, match="not a run option: colour"):
        RunOptions.with_fields(None, {"colour": "red", "samples": 2})
    assert RunOptions.with_fields(RunOptions(samples=3), {"swap": True}) == RunOptions(samples=3, swap=True)
