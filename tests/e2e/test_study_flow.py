"""The acceptance test for "a study works": one crowd study run end to end (tests/e2e/study_run.py),
then one test per promise a research team relies on.

The run happens once per test session and database; each test below judges one promise on what
the run saw.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import math
import zipfile
from collections import Counter
from html.parser import HTMLParser
from importlib import import_module

import pandas as pd
import pytest
from django.apps import apps
from django.core.management import call_command
from django.db.models import Count, Q
from django.test import override_settings

from annotator.models import (
    Annotation,
    AnnotatorStanding,
    Batch,
    Enrolment,
    Item,
    Job,
    JudgeCall,
    Stream,
    Trace,
)
from annotator.reports.exports.formats import EXPORT_FORMATS
from annotator.streams.sampling import is_sampled
from tests.e2e import stream_run as stream_flow
from tests.e2e import study_run as flow

# Each test reads the run's rows inside a transaction that is rolled back; the run itself is
# committed before the first test and flushed after the last.
pytestmark = pytest.mark.django_db
End = Enrolment.End


@pytest.fixture(scope="module")
def run(django_db_setup, django_db_blocker, tmp_path_factory):
    # The production link limit (30 opens a minute per address) behind one proxy (PROXY_COUNT=1).
    proxy = override_settings(ANNOTATOR_LINK_OPENS_PER_MINUTE=30, ANNOTATOR_PROXY_COUNT=1)
    with django_db_blocker.unblock(), proxy:
        try:
            yield flow.study_run(tmp_path_factory.mktemp("exports"))
        finally:
            # As a transactional test ends: rows gone, then what the migrations put there (the role groups).
            call_command("flush", verbosity=0, interactive=False)
            import_module("annotator.migrations.0002_role_groups").create_groups(apps, None)


def started(run):
    return [w for w in run.workers if not w.throttled]


def enrolment(worker) -> Enrolment:
    return Enrolment.objects.select_related("user").get(worker_id=worker.pid)


def test_no_5xx_anywhere(run):
    failures = [r for r in run.requests if r.status >= 500]
    assert not failures, failures[:10]
    assert len(run.requests) > 10 * len(started(run))  # the run did happen
    assert run.arrival_seconds < 30


def test_distinct_workers_behind_one_proxy_are_not_throttled(run):
    entries = [r for r in run.requests if r.path.startswith("/study/") and r.who != "one-address"]
    # the first wave, the second wave and the worker who returns the study later
    assert len({r.who for r in entries}) == flow.WORKERS + flow.WAVE + 1
    assert [w.pid for w in run.workers if w.throttled] == []
    assert not [r for r in entries if r.status == 429]


def test_one_address_opening_links_too_fast_is_still_refused(run):
    statuses = Counter(run.one_address_statuses)
    assert statuses[429] >= 70 - 2 * 30, statuses
    assert set(statuses) <= {302, 429}, statuses


def test_every_acknowledged_rating_is_stored_once_and_nothing_else(run):
    assert sum(len(w.acked) for w in run.workers) > 60
    for worker in started(run):
        if worker.behaviour == "declines":
            continue
        stored = set(
            Annotation.objects.filter(annotator=enrolment(worker).user).values_list("item_id", flat=True)
        )
        assert stored == worker.acked, worker  # 0 lost, and nothing stored that the worker was not told of
        assert not worker.refused & stored


def test_no_duplicates_and_no_item_over_k(run):
    pairs = Annotation.objects.values("item_id", "annotator_id").annotate(n=Count("id")).filter(n__gt=1)
    assert not pairs.exists()
    excluded = excluded_users(run)
    assert len(excluded) >= 2  # the researcher's exclusion and the block rule's
    batch_items = Item.objects.filter(batch_id=run.batch_id)
    valid = Count("annotations", filter=~Q(annotations__annotator_id__in=excluded))
    over = []
    for item in batch_items.annotate(valid=valid):
        assert item.n_annotations == item.valid, item.item_id  # the slot count the lease trusts
        if item.valid > 3:
            over.append(item.item_id)
    assert over == []
    assert (
        sum(i.n_annotations for i in batch_items)
        == Annotation.objects.filter(item__batch_id=run.batch_id).exclude(annotator_id__in=excluded).count()
    )


def excluded_users(run) -> set[int]:
    standings = AnnotatorStanding.objects.filter(batch_id=run.batch_id, excluded=True)
    return set(standings.values_list("annotator_id", flat=True))


def test_double_submits_and_second_tabs_add_nothing(run):
    double = [w for w in started(run) if w.behaviour in ("double_submit", "two_tabs")]
    assert double and all(w.already for w in double if w.behaviour == "double_submit"), double
    assert any(w.already for w in double if w.behaviour == "two_tabs"), double
    for worker in double:
        assert worker.already <= worker.acked


def test_invalid_forms_are_refused_then_fixed(run):
    invalid = [w for w in started(run) if w.behaviour == "invalid_form"]
    assert invalid and all(w.invalid_forms == 1 and len(w.acked) == flow.QUOTA for w in invalid), invalid


def test_a_lost_lease_or_the_end_of_time_drops_only_the_item_in_hand(run):
    lease = [w for w in started(run) if w.behaviour == "lease_expires"]
    assert lease and all(len(w.acked) + len(w.refused) >= flow.QUOTA for w in lease), lease
    timed = [w for w in started(run) if w.behaviour == "time_runs_out"]
    for worker in timed:
        assert len(worker.acked) == 1 and len(worker.refused) == 1, worker
        assert enrolment(worker).end == End.TIMED_OUT
    unrated = [w for w in started(run) if w.behaviour == flow.UNRATED]
    assert len(unrated) == 1 and not unrated[0].acked and len(unrated[0].refused) == 1, unrated


def test_the_item_in_hand_when_time_runs_out_is_free_for_the_next_worker_at_once(run):
    """The session (20 minutes) is shorter than the lease (30): the item a worker holds when their time
    runs out goes back to the other workers at the session's end, not at the lease's, while the worker's
    own late rating is refused with the usual message."""
    timed = [w for w in started(run) if w.behaviour in ("time_runs_out", flow.UNRATED)]
    assert len(timed) == flow.WORKERS // len(flow.BEHAVIOURS)
    for worker in timed:
        seen = worker.time_up
        assert seen["item"] in worker.refused, worker
        assert seen["lease_ended_at_deadline"] and seen["normal_expiry_ahead"], seen
        assert seen["freed"] and seen["free_or_taken"], seen
        assert seen["told"], worker


def test_a_worker_whose_time_ran_out_before_any_rating_gets_no_code(run):
    """Training done, then the clock ran out on the first item: no code, no trip to Prolific's
    completion URL, a page that says so and asks for the study back; the researcher's CSV says
    timed out with 0 items and no code given."""
    (worker,) = [w for w in started(run) if w.behaviour == flow.UNRATED]
    assert worker.training_answers == 2 and worker.codes == [] and worker.ended.endswith("/done/")
    assert "before you rated any item" in worker.end_text and "return your submission" in worker.end_text
    assert "submissions/complete" not in worker.end_text
    assert enrolment(worker).end == End.TIMED_OUT
    assert not Annotation.objects.filter(annotator=enrolment(worker).user).exists()
    rows = {r["worker_id"]: r for r in csv.DictReader(io.StringIO(run.workers_csv.read_text()))}
    row = rows[worker.pid]
    assert (row["state"], row["items_done"], row["completion_code_given"]) == ("timed out", "0", "0")
    assert {
        r["completion_code_given"] for p, r in rows.items() if p != worker.pid and r["state"] == "done"
    } == {"1"}


def test_completion_codes_go_only_to_finishers(run):
    for worker in started(run):
        e = enrolment(worker)
        ratings = Annotation.objects.filter(annotator=e.user).count()
        if flow.COMPLETION in worker.codes:
            assert e.end in (End.DONE, End.TIMED_OUT) and ratings >= 1, worker
        if e.end == End.DONE:
            assert flow.COMPLETION in worker.codes and ratings == flow.QUOTA, worker
        if e.end == End.TIMED_OUT:  # the code only for a time-out after at least one rating
            assert (flow.COMPLETION in worker.codes) == (ratings >= 1), worker
        assert set(worker.codes) <= {flow.COMPLETION, flow.SCREENED, flow.NOCONSENT}, worker


def test_training_and_checks_screen_out_with_the_screen_out_code(run):
    by_behaviour = {}
    for worker in started(run):
        by_behaviour.setdefault(worker.behaviour, []).append((worker, enrolment(worker)))
    for worker, e in by_behaviour["fails_training"]:
        assert worker.training_answers == 2 and not worker.acked, worker
        assert e.end == End.SCREENED_OUT and set(worker.codes) == {flow.SCREENED}, worker
    for worker, _e in by_behaviour["fails_checks"]:  # blocked by the check rule, and excluded by it
        assert worker.check_answers >= 1 and flow.COMPLETION not in worker.codes, worker
    for worker, e in by_behaviour["declines"]:
        assert e.end == End.DECLINED and set(worker.codes) == {flow.NOCONSENT} and not worker.acked
    careful = [w for w, e in by_behaviour["careful"]]
    assert all(w.training_answers == 2 and len(w.acked) == flow.QUOTA for w in careful), careful
    assert any(w.check_answers for w in careful)


def test_a_second_tab_does_not_break_consent(run):
    two_tabs = [w for w in started(run) if w.behaviour == "two_tabs"]
    assert two_tabs and all(not w.consent_refused for w in two_tabs), two_tabs


def test_a_judge_run_against_a_local_endpoint_finishes(run):
    assert run.judge_job_state == Job.DONE
    assert run.judge_calls_ok == run.judge_items == flow.N_ITEMS  # gold items are never judged


def _read(run, key):
    """An export as its reader sees it: a DataFrame, the JSON document, JSON Lines records, the
    Hugging Face dataset (its card and each config's rows), or the HTML text (parsed once to be sure it
    parses)."""
    path = run.exports[key]
    if key.endswith(".csv"):
        return pd.read_csv(path, keep_default_na=False)
    if key == "json":
        return json.loads(path.read_text())
    if key.endswith(".jsonl"):
        return [json.loads(line) for line in path.read_text().splitlines() if line]
    if key == "hf":
        import pyarrow.parquet as pq

        with zipfile.ZipFile(path) as archive:
            names = archive.namelist()
            card = archive.read(next(n for n in names if n.endswith("README.md"))).decode()
            configs = {
                n.split("/")[-2]: pq.read_table(io.BytesIO(archive.read(n))).to_pandas()
                for n in names
                if n.endswith(".parquet")
            }
        return card, configs
    text = path.read_text()
    HTMLParser().feed(text)
    return text


def test_every_export_is_written_and_reads_back(run):
    assert set(run.exports) == set(EXPORT_FORMATS)
    report = _read(run, "json")
    assert report["batch"] == "E2E study" and len(report["dimensions"]) == 5
    assert "<html" in _read(run, "html").lower() and "E2E study" in _read(run, "html")
    scores = _read(run, "scores.csv")
    assert list(scores.columns)[:7] == [
        "item_id",
        "system_id",
        "annotator",
        "dimension",
        "score",
        "overall_hcs",
        "submitted_at",
    ]
    assert len(scores) == 5 * sum(len(w.acked) for w in run.workers)
    annotations = _read(run, "annotations.csv")
    assert len(annotations) == sum(len(w.acked) for w in run.workers)
    assert not any(str(v).startswith("route-9") for v in annotations["item_id"])  # gold stays out
    assert len(_read(run, "items.csv")) >= 1 and len(_read(run, "dimensions.csv")) == 5
    judges = _read(run, "judges.csv")
    assert len(judges) >= 1
    # the judge run's answers leave the app item by item, and its calls without any key
    judge_scores = _read(run, "judge_scores.csv")
    assert len(judge_scores) >= run.judge_calls_ok > 0
    calls = _read(run, "judge_calls.jsonl")
    assert len(calls) == JudgeCall.objects.count() and not any("sk-e2e" in json.dumps(c) for c in calls)
    # the Hugging Face dataset holds every rating with a pseudonymous rater, the judge scores, and a card
    card, configs = _read(run, "hf")
    assert len(configs["ratings"]) == sum(len(w.acked) for w in run.workers)
    assert len(configs["judge_scores"]) == len(judge_scores) and "Agreement" in card
    rows = list(csv.DictReader(io.StringIO(run.workers_csv.read_text())))
    assert {r["worker_id"] for r in rows} == {w.pid for w in started(run)}
    assert all(r["session_id"].startswith("session-") for r in rows)


def test_no_platform_id_leaves_the_app_outside_the_workers_csv(run):
    pids = [w.pid for w in run.workers]
    for key, path in run.exports.items():
        if key == "hf":
            card, configs = _read(run, key)
            text = card + "".join(frame.to_csv() for frame in configs.values())
        else:
            text = path.read_text()
        assert not [p for p in pids if p in text], key


def test_the_json_report_marks_the_exclusions(run):
    report = _read(run, "json")
    exclusions = {e["annotator"]: e["rule"] for e in report["exclusions"]}
    blocked = {e.user.username for w in started(run) if w.behaviour == "fails_checks" for e in [enrolment(w)]}
    assert exclusions == {run.excluded_user: "researcher", **dict.fromkeys(blocked, "block rule")}


def test_csv_exports_mark_exclusions(run):
    for key in ("scores.csv", "annotations.csv"):
        table = _read(run, key)
        assert "excluded" in table.columns, key
        marked = {str(v).lower() in ("1", "true", "yes") for v in table["excluded"]}
        assert marked == {True, False}
        excluded_rows = table[table["excluded"].astype(str).str.lower().isin(["1", "true", "yes"])]
        names = {e["annotator"] for e in _read(run, "json")["exclusions"]}
        assert set(excluded_rows["annotator"]) == names and run.excluded_user in names, key
    # the dataset keeps the excluded raters' rows, marked, under pseudonyms
    _card, configs = _read(run, "hf")
    ratings = configs["ratings"]
    assert ratings["excluded"].any() and not ratings["excluded"].all()
    assert not set(ratings["rater"]) & {w.pid for w in run.workers} and run.excluded_user not in set(
        ratings["rater"]
    )


def test_a_worker_who_returns_on_prolific_frees_their_slot_at_once(run):
    returned = run.returned
    assert returned["leases_before"] == 1, "the worker held an item when they returned the study"
    assert returned["status"] == 200 and returned["leases_after"] == 0
    assert returned["end"] == Enrolment.End.RETURNED and not flow.CODE.search(returned["next_page"])


def test_the_judge_is_validated_against_the_people(run):
    """The judge run's scores meet the people's in the report: calibration and a PPI++ estimate."""
    judges = _read(run, "json")["judges"]
    assert judges, "the judge run made a judge section"
    entries = [d for dims in judges.values() for d in dims.values() if isinstance(d, dict) and d.get("ppi")]
    assert entries and all(
        set(e["ppi"]) >= {"estimate", "ci95", "n_labelled", "n_unlabelled", "lambda"} for e in entries
    )


# --------------------------------------------------------------------------- plan, route, review


def test_the_plan_page_and_the_command_give_one_plan_for_the_study_that_was_run(run):
    """The pilot's 12 items, 3 raters each, planned at the study's size on the page and with
    plan_study: the same pilot count, the same widths and item counts, every dimension and overall."""
    page, plan = run.plan_page, run.plan_json
    assert page["pilot_items"] == plan["pilot_items"] == flow.PILOT_ITEMS
    assert plan["items"] == flow.N_ITEMS == run.batch_items and plan["k"] == 3
    labels = {"overall": "Overall HCS", **{d: d.replace("_", "-").title() for d in flow.DIMENSIONS}}
    expected = {}
    for dimension, stats in plan["dimensions"].items():
        for statistic, p in stats.items():
            width = "—" if p["predicted_ci95_width"] is None else f"{p['predicted_ci95_width']:.4f}"
            items = "—" if p["items_for_target"] is None else str(p["items_for_target"])
            expected[(labels[dimension], statistic)] = (width, items)
    assert set(plan["dimensions"]) == {*flow.DIMENSIONS, "overall"}
    assert page["rows"] == expected
    # a target width the pilot's widths say is reachable: the items it needs are a number on both
    assert plan["dimensions"]["overall"]["hcs_mean"]["items_for_target"] is not None


def test_the_uncertain_items_are_one_list_on_the_page_the_api_and_the_command(run):
    page, api, command = run.review["page"], run.review["api"], run.review["command"]
    assert len(page) == flow.REVIEW_N
    as_text = [
        {k: ("" if v is None else repr(v) if isinstance(v, float) else v) for k, v in r.items()} for r in api
    ]
    assert page == command == as_text
    assert all("judges disagree" in r["reason"] for r in page)


def test_the_uncertainty_is_the_judges_spread_in_the_judge_export(run):
    """Each listed item's uncertainty is the SD of the two judges' scores that judge_scores.csv holds,
    and the list runs from the most to the least uncertain of every unlabelled judged item."""
    scores = _read(run, "judge_scores.csv")
    by_item = scores[scores["dimension"] == "overall"].pivot_table(
        index="item_id", columns="judge", values="value"
    )
    assert list(by_item.columns) == sorted(flow.JUDGES)

    def spread(item_id):
        a, b = by_item.loc[item_id]
        return abs(a - b) / math.sqrt(2)  # the sample SD of two values

    listed = run.review["page"]
    for row in listed:
        assert math.isclose(float(row["uncertainty"]), spread(row["item_id"]), rel_tol=1e-9), row
    # items left unrouted (those still unlabelled after the wave) were no more uncertain than the last listed
    unrouted = [
        r["item_id"] for r in run.review_after_wave if r["item_id"] not in {x["item_id"] for x in listed}
    ]
    assert all(spread(i) <= float(listed[-1]["uncertainty"]) + 1e-12 for i in unrouted)


def test_the_uncertain_items_go_first_in_the_queue_and_the_rest_keep_their_order(run):
    routed = [r["item_id"] for r in run.review["page"]]
    before, after = run.positions_before, run.positions_after
    assert [after[i] for i in routed] == list(range(flow.REVIEW_N))
    others = [i for i in before if i not in routed]
    assert sorted(others, key=before.get) == sorted(others, key=after.get)
    assert min(after[i] for i in others) >= flow.REVIEW_N


def test_after_people_rate_the_routing_the_exports_and_ppi_agree_on_what_is_labelled(run):
    """The second wave rated after the routing. Then the items still to route are exactly the judged
    items the report's PPI++ counts as unlabelled: those with no rating from an annotator who counts
    (annotations.csv without the excluded rows)."""
    wave = [w for w in run.workers if w.wave == 2]
    assert len(wave) == flow.WAVE and all(len(w.acked) == flow.QUOTA for w in wave), wave
    annotations = _read(run, "annotations.csv")
    excluded = annotations["excluded"].astype(str).str.lower().isin(["1", "true", "yes"])
    judged = set(_read(run, "judge_scores.csv")["item_id"])
    assert len(judged) == flow.N_ITEMS
    labelled = set(annotations.loc[~excluded, "item_id"]) & judged
    # routing and PPI++ agree on what is labelled: the excluded annotators' ratings count for neither
    assert {r["item_id"] for r in run.review_after_wave} == judged - labelled
    for judge in flow.JUDGES:
        ppi = _read(run, "json")["judges"][judge]["overall"]["ppi"]
        assert ppi["n_labelled"] == len(labelled), judge
        assert ppi["n_labelled"] + ppi["n_unlabelled"] == len(judged), judge
    # the PPI panel's human-only mean is the mean over labelled items of their people's overall HCS
    scores = _read(run, "scores.csv")
    kept = scores[~scores["excluded"].astype(str).str.lower().isin(["1", "true", "yes"])]
    per_item = kept.drop_duplicates(["item_id", "annotator"]).groupby("item_id")["overall_hcs"].mean()
    human_only = _read(run, "json")["judges"][flow.JUDGES[0]]["overall"]["ppi"]["human_only"]["estimate"]
    assert math.isclose(human_only, per_item.mean(), rel_tol=1e-9)


def test_the_ppi_estimate_says_what_its_labelled_set_is_a_sample_of(run):
    """The researcher put a ranked list first in the queue (the routing), so the labels are no longer a
    prefix of the batch's random order: the JSON withholds the estimate and both intervals, and says why
    and what to do; the methods paragraph names the order and its seed."""
    report = _read(run, "json")
    for judge in flow.JUDGES:
        ppi = report["judges"][judge]["overall"]["ppi"]
        assert ppi["sample"] == "not_random" and "ranked list" in ppi["sample_why"], (
            judge,
            ppi.get("sample_why"),
        )
        assert ppi["estimate"] is None and ppi["ci95"] is None and ppi["ci95_superpopulation"] is None
        assert ppi["sample_why"] and ppi["sample_fix"]
        assert ppi["n_labelled"] > 0 and ppi["n_unlabelled"] > 0  # the counts stay
    seed = Batch.objects.get(pk=run.batch_id).order_seed
    assert seed is not None and f"seed {seed}:" in _read(run, "html")


def test_every_judge_call_leaves_an_auditable_line(run):
    """judge_calls.jsonl holds every call, paid or served from the cache, with what was sent; a cached
    call is never spend."""
    calls = _read(run, "judge_calls.jsonl")
    assert len(calls) == JudgeCall.ledger.count() >= 2 * flow.N_ITEMS
    for call in calls:
        assert {"cached", "output_mode", "max_tokens", "provider_batch", "cost", "superseded"} <= set(call)
        assert call["status"] in {"ok", "unreadable", "ambiguous", "failed"}, call["status"]
        assert call["output_mode"] in {"text", "json_schema", "logprobs"}
        assert call["cached"] is False or not call["cost"]
    assert all(c["status"] == "ok" for c in calls)  # the fakes answer one score for a one-score template


def test_the_prolific_review_approves_and_pays_exactly_who_the_study_said(run):
    """On the fake Prolific API, from the Studies page: the dry run only reads; the review approves
    every worker shown the completion code except the one the researcher excluded (held for a person
    to decide), pays each of them the per-item bonus for the ratings stored, asks those the training
    screened out and the one whose time ran out before a rating to return, rejects nobody (every session was under Prolific's five minutes), and a
    second review sends nothing that changes anything (no approval, payment or return request again)."""
    p = run.prolific
    assert p["dry_status"] == 200 and p["dry_methods"] == {"GET"}
    assert p["status"] == p["again_status"] == 200 and "Done for E2E study." in p["page"]
    coded = {w.pid for w in started(run) if flow.COMPLETION in w.codes}
    approved = {pid for pid, status in p["statuses"].items() if status == "APPROVED"}
    assert run.excluded_pid in coded and approved == coded - {run.excluded_pid}
    assert p["statuses"][run.excluded_pid] == "AWAITING REVIEW"
    pence = round(float(flow.BONUS_PER_ITEM) * 100)
    stored = {w.pid: Annotation.objects.filter(annotator=enrolment(w).user).count() for w in started(run)}
    assert p["paid"] == {pid: [pence * stored[pid]] for pid in approved}
    screened = {w.pid for w in started(run) if w.behaviour == "fails_training"}
    unrated = {w.pid for w in started(run) if w.behaviour == flow.UNRATED}
    assert screened and unrated and p["return_requested"] == screened | unrated
    assert not {p["statuses"][pid] for pid in unrated} - {"AWAITING REVIEW"}  # never approved
    assert "REJECTED" not in p["statuses"].values()
    assert p["statuses"][flow.pid_of(flow.WORKERS)] == "RETURNED"
    assert p["paid_again"] == p["paid"]
    assert not [
        path
        for path in p["posts_again"]
        if "transition" in path or "approve" in path or "pay" in path or "request-return" in path
    ]


# --------------------------------------------------------------------------- the production stream
def test_the_stream_is_made_and_fed_through_the_api(run):
    seen = run.stream
    assert seen.created == 201
    n = stream_flow.PER_DAY * (stream_flow.DAYS_BEFORE + stream_flow.DAYS_AFTER)
    assert (seen.ingest["accepted"], seen.ingest["duplicates"], seen.ingest["errors"]) == (n, 0, [])
    # The hash rule chose the sample: anyone with the salt recomputes it.
    stream = Stream.objects.get(name=stream_flow.STREAM)
    ids = Trace.objects.filter(stream=stream).order_by("trace_id").values_list("trace_id", flat=True)
    assert sorted(seen.sampled) == [t for t in ids if is_sampled(stream.salt, t, stream_flow.HUMAN_RATE)]
    assert seen.recent_sampled and seen.labels_status == 201
    # The labels of the earlier days alone show nothing: the judge drifts on the days nobody rated yet.
    assert seen.alerts_before == []


def test_people_rate_the_streams_recent_sample_in_the_browser_exactly_k_times(run):
    seen = run.stream
    for rater, saved in seen.rated.items():
        assert sorted(saved) == sorted(seen.recent_sampled), rater  # each once, all of them
    batch = Stream.objects.get(name=stream_flow.STREAM).batch
    assert {i.n_annotations for i in batch.items.all()} == {stream_flow.K}
    by_people = Annotation.objects.filter(item__batch=batch, source=Annotation.Source.WEB)
    assert by_people.count() == stream_flow.K * len(seen.recent_sampled)


def test_the_workers_refresh_raises_the_judge_drift_and_delivers_it_signed(run):
    seen = run.stream
    alerts = seen.alerts["alerts"]
    assert [(a["kind"], a["judge"], a["dimension"]) for a in alerts] == [
        ("judge_drift", stream_flow.JUDGE, stream_flow.DIMENSION)
    ]
    [alert] = alerts
    drifted = stream_flow.DAY0 + dt.timedelta(days=stream_flow.DAYS_BEFORE)
    assert alert["since"] == drifted.isoformat() and alert["detected_at"] >= alert["since"]
    assert alert["evidence"]["direction"] == "down"
    assert alert["evidence"]["statistic"] >= alert["evidence"]["threshold"]
    assert alert["evidence"]["after"] < alert["evidence"]["before"]
    assert [(d["attempt"], d["status_code"], d["ok"]) for d in alert["deliveries"]] == [(1, 200, True)]
    [(headers, body)] = seen.delivered
    assert stream_flow.signature_valid(headers, body)
    assert not stream_flow.signature_valid(headers, body.replace(b"judge_drift", b"judge_fine"))
    assert headers["X-HCS-Event-Id"] == alert["event_id"]
    payload = json.loads(body)
    assert (payload["event_id"], payload["kind"], payload["stream"]) == (
        alert["event_id"],
        "judge_drift",
        stream_flow.STREAM,
    )
    # The stream page lists it too.
    assert "judge_drift" in seen.page and drifted.strftime("%Y-%m-%d") in seen.page
