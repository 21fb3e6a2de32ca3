"""A crowd worker's rating submit meets the study through one seam: the rating package calls the
rating hooks (``annotator.rating.hooks``), which the study implements beside its gate
(``annotator.studies.services.enrolment.StudyFlow``), so a submit visits at most two study modules.

``pytest -s`` prints the path: the project functions each file gave, and how often they were called."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import pytest
from django.urls import reverse

from tests.annotator.study_support import PID_A, RATING, arrive, prolific_link, rate_next, start
from tests.factories import make_batch

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[3]


def submit_path(client, batch, **headers) -> tuple[dict[str, set], Counter]:
    """The project functions one rating submit calls, by file, and the number of calls per file."""
    item = client.get(reverse("annotate_next", args=[batch.pk])).context["item"]
    functions: dict[str, set] = {}
    calls: Counter = Counter()

    def profile(frame, event, _arg):
        if event != "call":
            return
        code = frame.f_code
        path = code.co_filename
        if not path.startswith(str(ROOT)) or "/tests/" in path or "/.venv/" in path:
            return
        name = str(Path(path).relative_to(ROOT))
        functions.setdefault(name, set()).add(code.co_name)
        calls[name] += 1

    sys.setprofile(profile)
    try:
        response = client.post(reverse("annotate_submit", args=[item.pk]), RATING, headers=headers)
    finally:
        sys.setprofile(None)
    assert response.status_code in (200, 302)
    return functions, calls


@pytest.mark.parametrize(
    ("headers", "quota"),
    [({}, 4), ({"HX-Request": "true"}, 4), ({"HX-Request": "true"}, 2)],
    ids=["redirect", "htmx", "htmx-quota-reached"],
)
def test_a_submit_visits_at_most_two_study_modules(headers, quota):
    batch = make_batch("seam", n_items=6)
    _link, token = prolific_link(batch, quota=quota, max_minutes=30)
    client, _ = arrive(token, PID_A)
    start(client, batch)
    rate_next(client, batch)  # statements are built once per process: measure a later submit
    functions, calls = submit_path(client, batch, **headers)
    studies = {name: found for name, found in functions.items() if name.startswith("annotator/studies/")}
    report = "\n".join(
        f"{len(found):4d} {calls[name]:5d} {name}" for name, found in sorted(functions.items())
    )
    print(f"\nsubmit {headers}, quota {quota}: distinct functions and calls per file\n{report}")
    print(
        f"study modules {len(studies)}, study functions {sum(map(len, studies.values()))}, "
        f"study calls {sum(calls[name] for name in studies)}:",
        sorted(f"{name.rsplit('/', 1)[1]}:{f}" for name, found in studies.items() for f in found),
    )
    assert set(studies) <= {"annotator/studies/services/enrolment.py", "annotator/studies/selectors.py"}
    assert "before_rating" in studies["annotator/studies/services/enrolment.py"]
