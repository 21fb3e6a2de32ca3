"""export_report --format hf: the folder datasets.load_dataset reads, its card, its privacy, its round trip."""

from __future__ import annotations

import json
import re
from io import StringIO

import numpy as np
import pyarrow.parquet as pq
import pytest
from django.core.management import CommandError, call_command
from django.test import override_settings
from django.urls import reverse
from scipy.stats import entropy as scipy_entropy

from annotator.judges.exports import tables
from annotator.models import Job
from annotator.reports.exports.formats import EXPORT_FORMATS
from annotator.reports.exports.json_export import report_to_dict
from annotator.reports.hf import rows as hf_rows
from annotator.reports.hf.writer import DatasetRefused, dataset_write
from annotator.reports.selectors.batch_report import batch_report
from annotator.services.job_runner import job_run
from hcs import datasets as hcs_datasets
from tests.annotator.hf_support import study_batch, unzip
from tests.factories import make_batch, make_user

pytestmark = pytest.mark.django_db
CONFIGS = ("ratings", "items", "judge_scores", "pairwise_verdicts")


@pytest.fixture
def study():
    return study_batch()


def export(batch, folder, *args):
    err = StringIO()
    call_command("export_report", batch.name, "--format", "hf", "--out", str(folder), *args, stderr=err)
    return err.getvalue()


def load_config(folder, config, cache):
    import datasets  # requirements-dev.txt: the app itself never needs it, a user loading the folder does

    return datasets.load_dataset(str(folder), config, split="train", cache_dir=str(cache))


def test_every_config_loads_with_datasets_and_holds_every_row(study, tmp_path):
    batch, _ = study
    message = export(batch, tmp_path / "ds")
    assert "ratings 52 rows" in message
    n_annotations = sum(item.annotations.count() for item in batch.items.all())
    expected = {"ratings": n_annotations, "items": 12, "judge_scores": 24, "pairwise_verdicts": 3}
    for config in CONFIGS:
        data = load_config(tmp_path / "ds", config, tmp_path / "cache")
        assert data.num_rows == expected[config], config
    ratings = load_config(tmp_path / "ds", "ratings", tmp_path / "cache")
    dims = batch.rubric_obj.dimension_keys
    assert ratings.column_names == [
        "item_id",
        "system_id",
        "prompt_id",
        "rater",
        *dims,
        "flags",
        "constraints_met",
        "seconds",
        "source",
        "excluded",
        "created_at",
    ]
    assert set(ratings["source"]) == {"import"}
    assert None in ratings[dims[-1]]  # a dimension left unrated is null, not 0


def test_round_trip_gives_the_reports_coefficients_exactly(study, tmp_path):
    batch, _ = study
    export(batch, tmp_path / "ds")
    report = batch_report(batch=batch)
    loaded = hcs_datasets.load(tmp_path / "ds")
    assert loaded.k == batch.k and loaded.dimensions == batch.rubric_obj.dimension_keys
    for row in report.dimensions:
        again = loaded.agreement(row.key)
        a = row.agreement
        assert again.fleiss_kappa == a.fleiss_kappa and again.alpha_ordinal == a.alpha_ordinal
        assert again.alpha_interval == a.alpha_interval and again.gwet_ac2 == a.gwet_ac2
        assert again == a  # the intervals too: same counts, same item order, same seed
    # With the excluded rater put back, the statistics change: the flag is what keeps them out.
    everyone = loaded.agreement(report.dimensions[0].key, include_excluded=True)
    assert everyone.n_ratings > report.dimensions[0].agreement.n_ratings


def test_the_cards_agreement_table_equals_the_json_report_to_its_precision(study, tmp_path):
    batch, _ = study
    export(batch, tmp_path / "ds", "--resamples", "200", "--seed", "5")
    card = (tmp_path / "ds" / "README.md").read_text(encoding="utf-8")
    data = json.loads(call_command_json(batch, "--resamples", "200", "--seed", "5"))
    keys = ("fleiss_kappa", "krippendorff_alpha_ordinal", "krippendorff_alpha_interval", "gwet_ac2")
    for dim, values in data["dimensions"].items():
        line = next(line for line in card.splitlines() if f"(`{dim}`)" in line)
        cells = [c.strip() for c in line.strip("|").split("|")][1:5]
        for key, text in zip(keys, cells, strict=True):
            numbers = [float(x) for x in re.findall(r"-?\d+\.\d+", text)]
            expected = [values[key], *(values[f"{key}_ci95"] or [])]
            assert numbers == [round(v, 3) for v in expected], (dim, key, text)
    assert data["methods"] in card
    front = card.split("---\n")[1]
    assert "license:" in front and "size_categories:" in front and "task_categories:" in front
    assert "config_name: judge_scores" in front and "path: data/ratings/train.parquet" in front
    assert "200 resamples, seed 5" in card


def call_command_json(batch, *args) -> str:
    out = StringIO()
    call_command("export_report", batch.name, "--format", "json", *args, stdout=out)
    return out.getvalue()


def test_raters_are_pseudonymous_stable_and_never_a_username(study, tmp_path):
    batch, raters = study
    export(batch, tmp_path / "a")
    export(batch, tmp_path / "b")
    first = pq.read_table(tmp_path / "a" / "data/ratings/train.parquet").column("rater").to_pylist()
    second = pq.read_table(tmp_path / "b" / "data/ratings/train.parquet").column("rater").to_pylist()
    assert first == second  # stable across exports of the batch
    usernames = {r.username for r in raters}
    assert not usernames & set(first)
    everything = b"".join(p.read_bytes() for p in (tmp_path / "a").rglob("*") if p.is_file())
    for name in usernames:
        assert name.encode() not in everything, name  # nowhere: not in the card, not in a parquet file
    other = make_batch("another batch")
    assert hf_rows.rater_pseudonym(batch_id=other.pk, user_pk=raters[0].pk) != hf_rows.rater_pseudonym(
        batch_id=batch.pk, user_pk=raters[0].pk
    )


def test_pseudonyms_depend_on_the_secret_key(study):
    batch, raters = study
    before = hf_rows.rater_pseudonym(batch_id=batch.pk, user_pk=raters[0].pk)
    with override_settings(SECRET_KEY="another-secret-key-entirely-0123456789"):
        after = hf_rows.rater_pseudonym(batch_id=batch.pk, user_pk=raters[0].pk)
    assert before != after and re.fullmatch(r"rater-[0-9a-f]{16}", before)


@override_settings(SECRET_KEY="pinned-secret-key-for-the-pseudonym-test-0123456789")
def test_pseudonyms_are_those_of_datasets_already_published():
    # A published dataset's rater ids must stay the same in its next export: the salt is part of the
    # contract, and stays as it was when the module lived at annotator/exports/hf/rows.py.
    assert hf_rows.rater_pseudonym(batch_id=7, user_pk=42) == "rater-ab87ac6ac77cb3ac"


def test_rater_names_on_request_and_unicode_survives(study, tmp_path):
    batch, raters = study
    export(batch, tmp_path / "ds", "--rater-names")
    ratings = pq.read_table(tmp_path / "ds" / "data/ratings/train.parquet")
    stored = raters[-1].username  # Django keeps usernames NFKC-normalised; the rest of the name is kept whole
    assert stored.startswith("Zoë-") and stored.endswith("日本語-\u202eevil")
    assert stored in ratings.column("rater").to_pylist()
    items = pq.read_table(tmp_path / "ds" / "data/items/train.parquet")
    assert items.column("item_id").to_pylist()[0] == "Publish me ✓ — études-0"
    card = (tmp_path / "ds" / "README.md").read_text(encoding="utf-8")
    assert 'pretty_name: "Publish me ✓ — études"' in card
    judges = pq.read_table(tmp_path / "ds" / "data/judge_scores/train.parquet")
    assert "ok 👍" in judges.column("reason").to_pylist()


def test_excluded_raters_rows_are_kept_and_marked(study, tmp_path):
    batch, raters = study
    export(batch, tmp_path / "ds")
    ratings = pq.read_table(tmp_path / "ds" / "data/ratings/train.parquet").to_pydict()
    excluded_id = hf_rows.rater_pseudonym(batch_id=batch.pk, user_pk=raters[1].pk)
    marked = {r for r, e in zip(ratings["rater"], ratings["excluded"], strict=True) if e}
    assert marked == {excluded_id}
    assert ratings["rater"].count(excluded_id) == raters[1].annotations.count() > 0
    card = (tmp_path / "ds" / "README.md").read_text(encoding="utf-8")
    assert "1 rater was excluded (1 by researcher)" in card
    assert (
        f"| {excluded_id} | researcher | {excluded_id} answered at random |" in card
    )  # the name in the reason too
    # The judges' calibration is against the people's mean without the excluded rater: said plainly.
    assert "follow the people's mean score per item (the excluded raters' scores left out)" in card
    assert "humans of" not in card


def test_items_hold_soft_labels_entropy_and_the_reports_hcs_mean(study, tmp_path):
    batch, _ = study
    export(batch, tmp_path / "ds")
    items = pq.read_table(tmp_path / "ds" / "data/items/train.parquet").to_pydict()
    report = batch_report(batch=batch)
    dims = batch.rubric_obj.dimension_keys
    for j, dim in enumerate(dims):
        counts = report.arrays.counts[j]  # the report's own counts, excluded rater left out
        for n, dist in enumerate(items[f"{dim}_dist"]):
            if counts[n].sum() == 0:
                assert dist is None and items[f"{dim}_mean"][n] is None
                continue
            assert dist == pytest.approx((counts[n] / counts[n].sum()).tolist(), abs=1e-15)
            assert sum(dist) == pytest.approx(1.0)
            assert items[f"{dim}_entropy"][n] == pytest.approx(scipy_entropy(dist, base=2), abs=1e-12)
            assert items[f"{dim}_mean"][n] == pytest.approx(
                np.dot(counts[n], [1, 2, 3, 4, 5]) / counts[n].sum()
            )
    means = [None if not np.isfinite(m) else m for m in report.items.mean]
    assert items["hcs_mean"] == pytest.approx(means)
    assert items["n_annotations"] == [int(c) for c in report.arrays.counts.sum(axis=2).max(axis=0)]
    assert items["gold"] == [i == 5 for i in range(12)]
    assert items[f"adjudicated_{dims[0]}"][2] == 4 and items[f"adjudicated_{dims[0]}"][3] is None
    assert items["constraints"][0] == ["avoid tolls", "arrive before 8AM"]


def test_judge_tables_have_the_csv_columns(study, tmp_path):
    batch, _ = study
    export(batch, tmp_path / "ds")
    scores = pq.read_table(tmp_path / "ds" / "data/judge_scores/train.parquet")
    published = list(tables.JUDGE_SCORES_PUBLISHED)
    assert scores.column_names == published
    assert (
        published
        == (
            "item_id system_id judge judge_version dimension raw_value value reason model provider "
            "template_hash sample call_status logprob_score confidence"
        ).split()
    )
    rows = scores.to_pylist()
    # the same rows as judge_scores.csv: one source for both
    csv_rows = [{c: row[c] for c in published} for _, row in tables.judge_score_rows(batch=batch)]
    assert rows == csv_rows and len(rows) > 0
    called = next(r for r in rows if r["judge"].startswith("gpt-judge"))
    assert called["call_status"] == "ok" and called["model"] == "gpt-x" and called["sample"] == 0
    imported = next(r for r in rows if r["judge"] == "file-judge")
    assert imported["call_status"] == "imported"
    verdicts = pq.read_table(tmp_path / "ds" / "data/pairwise_verdicts/train.parquet").to_pylist()
    assert [v["order_sent"] for v in verdicts] == ["baseline_first", "enhanced_first", "baseline_first"]
    # The swapped call showed sys-b's response first and preferred it ("baseline" = first shown):
    # in the pair's own roles that is the enhanced system, sys-b.
    assert verdicts[1]["baseline_system"] == "sys-a" and verdicts[1]["winner"] == "enhanced"
    assert verdicts[0]["criterion_scores"] == [
        {"criterion": "accuracy", "rubric_dimension": "coherence", "raw_value": 4.0}
    ]


def test_a_column_the_judge_table_publishes_reaches_the_dataset(study, tmp_path, monkeypatch):
    # The dataset's judge_scores columns are read from the judge table's published list when the
    # dataset is written: publishing one more CSV column there is all it takes.
    batch, _ = study
    monkeypatch.setattr(
        tables, "JUDGE_SCORES_PUBLISHED", {**tables.JUDGE_SCORES_PUBLISHED, "prompt_id": "string"}
    )
    export(batch, tmp_path / "ds")
    scores = pq.read_table(tmp_path / "ds" / "data/judge_scores/train.parquet")
    assert scores.column_names[-1] == "prompt_id"
    assert scores.column("prompt_id").to_pylist() == [
        row["prompt_id"] for _, row in tables.judge_score_rows(batch=batch)
    ]
    assert all(scores.column("prompt_id").to_pylist())


def test_the_published_judge_columns_are_csv_columns_in_csv_order():
    published = list(tables.JUDGE_SCORES_PUBLISHED)
    assert published == [c for c in tables.JUDGE_SCORES_COLUMNS if c in tables.JUDGE_SCORES_PUBLISHED]
    assert [name for name, _ in tables.JUDGE_SCORES_TABLE] == tables.JUDGE_SCORES_COLUMNS


def test_an_empty_batch_gives_every_schema_with_no_rows(tmp_path):
    batch = make_batch("empty", n_items=0)
    export(batch, tmp_path / "ds")
    assert not (tmp_path / "ds" / "data/judge_scores").exists()  # only when the batch has them
    dims = batch.rubric_obj.dimension_keys
    import datasets

    for config in ("ratings", "items"):
        table = pq.read_table(tmp_path / "ds" / f"data/{config}/train.parquet")
        assert table.num_rows == 0
        # datasets refuses to materialise a split of 0 rows ("corresponds to no data"); streamed, it
        # reads the schema and the (no) rows.
        streamed = datasets.load_dataset(
            str(tmp_path / "ds"), config, split="train", streaming=True, cache_dir=str(tmp_path / "cache")
        )
        assert list(streamed) == [] and list(streamed.features) == table.column_names
    assert dims[0] in table.column_names or f"{dims[0]}_dist" in table.column_names
    assert pq.read_schema(tmp_path / "ds" / "data/ratings/train.parquet").field(dims[0]).type == "int8"
    loaded = hcs_datasets.load(tmp_path / "ds")
    assert loaded.agreement(dims[0]).fleiss_kappa is None
    assert "has been rated yet" in (tmp_path / "ds" / "README.md").read_text(encoding="utf-8")


def test_bad_destinations_and_options_are_refused_and_write_nothing(study, tmp_path, monkeypatch):
    batch, _ = study
    full = tmp_path / "full"
    full.mkdir()
    (full / "mine.txt").write_text("keep me")
    with pytest.raises(CommandError, match="not empty"):
        export(batch, full)
    assert [p.name for p in full.iterdir()] == ["mine.txt"]
    (tmp_path / "file").write_text("x")
    with pytest.raises(CommandError, match="is a file"):
        export(batch, tmp_path / "file")
    with pytest.raises(CommandError, match="does not exist"):
        export(batch, tmp_path / "no" / "such")
    with pytest.raises(CommandError, match="--out DIR"):
        call_command("export_report", batch.name, "--format", "hf")
    with pytest.raises(CommandError, match="go with --format hf"):
        call_command("export_report", batch.name, "--format", "json", "--rater-names")
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))  # no token file from a login either
    with pytest.raises(CommandError, match="HF_TOKEN"):
        export(batch, tmp_path / "pushed", "--push-to-hub", "someone/study")
    monkeypatch.setenv("HF_TOKEN", "hf_x")
    with pytest.raises(CommandError, match="not a Hub repository name"):
        export(batch, tmp_path / "pushed", "--push-to-hub", "../etc/passwd")
    assert not (tmp_path / "pushed").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".hf-")]  # no staging folder left behind


def test_a_rubric_dimension_named_like_a_column_is_refused(tmp_path):
    from hcs.rubric import Rubric

    rubric = Rubric.from_dict(
        json.loads(json.dumps(Rubric.default().to_dict()).replace('"coherence"', '"source"'))
    )
    batch = make_batch("clash", rubric=rubric)
    with pytest.raises(DatasetRefused, match="'source'"):
        dataset_write(batch=batch, report=batch_report(batch=batch, n_resamples=0), out=tmp_path / "ds")
    assert not (tmp_path / "ds").exists()


def test_the_report_page_button_downloads_the_folder_as_a_zip(study, client, tmp_path):
    batch, _ = study
    client.force_login(make_user("reader", role="researcher"))
    page = client.get(reverse("report_batch", args=[batch.pk]))
    url = reverse("report_export", args=[batch.pk, "hf"])
    assert url in page.content.decode()
    response = client.get(url)
    assert response.status_code == 200 and response["Content-Type"] == "application/zip"
    assert response["Content-Disposition"].endswith('-hf-dataset.zip"')
    folder = unzip(response.content, tmp_path / "unzipped")
    assert (folder / "README.md").is_file()
    loaded = hcs_datasets.load(folder)
    assert loaded.agreement(loaded.dimensions[0]) == batch_report(batch=batch).dimensions[0].agreement


def test_the_api_job_builds_the_zip(study, client, tmp_path, django_capture_on_commit_callbacks):
    from annotator.services.api_tokens import api_token_create

    batch, _ = study
    user = make_user("api-reader", role="researcher")
    _, key = api_token_create(user=user, name="t", days=1)
    headers = {"Authorization": f"Bearer {key}"}
    with django_capture_on_commit_callbacks(execute=False):
        response = client.post(f"/api/v1/batches/{batch.pk}/exports/hf", headers=headers)
    assert response.status_code == 202
    job = Job.objects.get(pk=response.json()["id"])
    assert job.params["fmt"] == "hf"
    assert job_run(job_id=str(job.pk)) == Job.DONE
    result = client.get(f"/api/v1/jobs/{job.pk}/result", headers=headers)
    assert result.status_code == 200 and result["Content-Type"] == "application/zip"
    folder = unzip(result.content, tmp_path / "job")
    assert pq.read_table(folder / "data/ratings/train.parquet").num_rows == 52
    assert client.post("/api/v1/batches/999999/exports/hf", headers=headers).status_code == 404


def test_the_format_is_one_row_of_the_export_table():
    fmt = EXPORT_FORMATS["hf"]
    assert fmt.background and fmt.zipped is not None and fmt.content_type == "application/zip"
    assert not fmt.needs_report  # it builds the report its card quotes itself (without the over-time series)


def test_the_json_report_and_the_card_name_the_same_methods(study, tmp_path):
    batch, _ = study
    report = batch_report(batch=batch)
    written = dataset_write(batch=batch, report=report, out=tmp_path / "ds")
    assert report_to_dict(report)["methods"] in (written.folder / "README.md").read_text(encoding="utf-8")
