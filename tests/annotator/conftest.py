"""Hooks for tests/annotator: the fuzz tests' tally of cases run, shown at the end of the run."""

from pathlib import Path

from tests.annotator import fuzz_support

OUTPUT = Path(__file__).resolve().parents[2] / "test-output" / "fuzz_cases.json"


def pytest_terminal_summary(terminalreporter):
    summary = fuzz_support.write_summary(OUTPUT)
    if summary:
        terminalreporter.write_sep("-", "fuzz cases run (also in test-output/fuzz_cases.json)")
        terminalreporter.write_line(summary)
