"""The admins' upload page: roles, preview with every error, confirm saves in one go, escaping."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from annotator.models import Annotation, Batch, Item, Score
from tests.factories import make_batch, make_user, upload_storage_at

pytestmark = pytest.mark.django_db

GOOD = (
    "item_id,prompt,response,system_id,constraints\n"
    "r1,Plan a route to the airport avoiding tolls.,Take Route 9 (no tolls).,sys-a,avoid tolls\n"
    "r2,Plan a route to the airport avoiding tolls.,Take the I-90 toll road.,sys-b,avoid tolls\n"
    "r3,Get me to work before 8AM.,Leave at 7:10 via Elm St.,sys-a,arrive before 8AM\n"
)


@pytest.fixture(autouse=True)
def upload_dir(settings, tmp_path):
    return upload_storage_at(settings, tmp_path / "uploads")


@pytest.fixture
def admin_client(client, admin_user):
    client.force_login(admin_user)
    return client


def _post_preview(
    client, content: str | bytes, *, mode="batch", name="new-batch", k="3", filename="items.csv"
):
    data = content.encode("utf-8") if isinstance(content, str) else content
    payload = {
        "mode": mode,
        "name": name,
        "file": SimpleUploadedFile(filename, data, content_type="text/csv"),
    }
    if k is not None:
        payload["k"] = k
    return client.post(reverse("upload_preview"), payload)


def _counts():
    return (Batch.objects.count(), Item.objects.count(), Annotation.objects.count(), Score.objects.count())


def test_anonymous_is_sent_to_login(client):
    for name in ("upload", "upload_preview", "upload_confirm"):
        response = client.get(reverse(name)) if name == "upload" else client.post(reverse(name))
        assert response.status_code == 302
        assert response.url.startswith(reverse("login"))


@pytest.mark.parametrize("role", ["annotator", "researcher"])
def test_non_admins_get_403(client, role):
    client.force_login(make_user(f"u-{role}", role=role))
    assert client.get(reverse("upload")).status_code == 403
    before = _counts()
    assert _post_preview(client, GOOD).status_code == 403
    assert client.post(reverse("upload_confirm"), {"token": "x" * 32}).status_code == 403
    assert _counts() == before


def test_upload_page_has_both_forms_and_the_template_link(admin_client):
    page = admin_client.get(reverse("upload")).content.decode()
    assert 'value="batch"' in page and 'value="annotations"' in page
    assert reverse("annotation_template") in page
    assert 'enctype="multipart/form-data"' in page


def test_home_links_admins_to_the_upload_page(admin_client):
    assert reverse("upload") in admin_client.get(reverse("home")).content.decode()


def test_template_download(admin_client):
    response = admin_client.get(reverse("annotation_template"))
    assert response.status_code == 200
    assert "attachment" in response["Content-Disposition"]
    header = b"".join(response.streaming_content).decode().splitlines()[0]
    assert header.startswith("item_id,system_id,prompt,response,annotator,coherence")


def test_preview_then_confirm_saves_the_batch(admin_client, admin_user, upload_dir):
    response = _post_preview(admin_client, GOOD)
    assert response.status_code == 200
    page = response.content.decode()
    assert "Nothing has been saved yet" in page
    assert "sys-a (2)" in page and "sys-b (1)" in page
    assert "Take Route 9 (no tolls)." in page
    assert Batch.objects.count() == 0, "the preview saves nothing"
    token = response.context["token"]
    assert (upload_dir / f"{token}.upload").is_file()

    response = admin_client.post(reverse("upload_confirm"), {"token": token})
    assert response.status_code == 302
    batch = Batch.objects.get(name="new-batch")
    assert batch.created_by == admin_user and batch.k == 3
    assert list(batch.items.values_list("item_id", flat=True)) == ["r1", "r2", "r3"]
    assert not (upload_dir / f"{token}.upload").exists()
    # The token is spent: confirming again (a second click, another tab) saves nothing more and says so.
    response = admin_client.post(reverse("upload_confirm"), {"token": token}, follow=True)
    assert "already saved" in response.content.decode()
    assert Item.objects.count() == 3


def test_after_a_save_the_page_links_the_batch_report_assignment_and_a_study_link(admin_client):
    token = _post_preview(admin_client, GOOD, name="next-steps").context["token"]
    response = admin_client.post(reverse("upload_confirm"), {"token": token}, follow=True)
    batch = Batch.objects.get(name="next-steps")
    page = response.content.decode()
    assert "Next, for the batch you saved" in page
    study_link = f"{reverse('studies')}?batch={batch.pk}#new-study-link"
    for href in (
        reverse("report_batch", args=[batch.pk]),
        reverse("assignment_batch", args=[batch.pk]),
        study_link,
    ):
        assert f'href="{href}"' in page
    # The study link's form then starts on that batch; a made-up batch there is no error.
    studies = admin_client.get(study_link).content.decode()
    assert f'<option value="{batch.pk}" selected>' in studies
    assert admin_client.get(f"{reverse('studies')}?batch=x").status_code == 200
    assert "upload-saved" not in admin_client.get(reverse("upload")).content.decode()


def test_preview_lists_every_error_with_row_and_column_and_offers_no_confirm(admin_client):
    bad = GOOD + "r3,Another prompt,,sys-c,\n" + ",p,r,sys-c,\n"
    response = _post_preview(admin_client, bad)
    page = response.content.decode()
    errors = [str(e) for e in response.context["preview"].errors]
    assert "row 5, column `item_id`: `r3` is already used on row 4" in errors
    assert "row 5, column `response`: is empty" in errors
    assert "row 6, column `item_id`: is empty" in errors
    assert "3 problems" in page
    assert "upload_confirm" not in page and reverse("upload_confirm") not in page
    assert response.context["token"] == ""
    assert _counts() == (0, 0, 0, 0)


def test_another_admins_token_or_a_forged_one_is_refused(admin_client, client):
    token = _post_preview(admin_client, GOOD).context["token"]
    other = make_user("admin2", role="admin")
    client.force_login(other)
    response = client.post(reverse("upload_confirm"), {"token": token}, follow=True)
    assert "no longer waiting" in response.content.decode()
    response = client.post(reverse("upload_confirm"), {"token": "../../etc/passwd"}, follow=True)
    assert "no longer waiting" in response.content.decode()
    assert Batch.objects.count() == 0


def test_cancel_deletes_the_waiting_file(admin_client, upload_dir):
    token = _post_preview(admin_client, GOOD).context["token"]
    admin_client.post(reverse("upload_cancel"), {"token": token})
    assert not (upload_dir / f"{token}.upload").exists()
    assert Batch.objects.count() == 0


def test_model_text_is_escaped_in_the_preview(admin_client):
    evil = 'item_id,prompt,response\nx1,"<script>alert(1)</script>","<img src=x onerror=alert(2)>"\n'
    page = _post_preview(admin_client, evil).content.decode()
    assert "<script>alert(1)</script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<img src=x" not in page


def test_errors_naming_user_text_are_escaped(admin_client):
    evil = "item_id,prompt,response\n<b>x</b>,p,r\n<b>x</b>,p,r\n"
    page = _post_preview(admin_client, evil).content.decode()
    assert "<b>x</b>" not in page and "&lt;b&gt;x&lt;/b&gt;" in page


def test_k_below_three_is_refused_by_the_form(admin_client):
    response = _post_preview(admin_client, GOOD, k="2")
    assert response.status_code == 400
    assert "k must be at least 3" in response.content.decode()
    assert Batch.objects.count() == 0


def test_existing_batch_name_is_refused_in_the_preview(admin_client):
    make_batch("taken", n_items=1)
    before = _counts()
    response = _post_preview(admin_client, GOOD, name="taken")
    assert "A batch named “taken” already exists" in response.content.decode()
    assert response.context["token"] == ""
    assert _counts() == before


def test_name_taken_between_preview_and_confirm_saves_nothing(admin_client):
    token = _post_preview(admin_client, GOOD, name="race").context["token"]
    make_batch("race", n_items=1)
    before = _counts()
    response = admin_client.post(reverse("upload_confirm"), {"token": token})
    assert response.status_code == 400
    assert "already exists" in response.content.decode()
    assert _counts() == before


def test_oversized_file_is_refused_with_a_clear_message(admin_client, settings):
    settings.ANNOTATOR_UPLOAD_MAX_BYTES = 100
    response = _post_preview(admin_client, GOOD)
    assert response.status_code == 400
    assert "the largest file accepted is 100 bytes" in response.content.decode()
    assert _counts() == (0, 0, 0, 0)


def test_non_utf8_file_is_refused_with_a_clear_message(admin_client):
    response = _post_preview(admin_client, "item_id,prompt,response\n1,Café,ok\n".encode("latin-1"))
    assert response.status_code == 400
    assert "not UTF-8" in response.content.decode()


def test_annotation_upload_preview_and_confirm(admin_client):
    make_batch("study", n_items=2)
    rows = (
        "item_id,annotator,coherence,relevance,instruction_following,safety_compliance,fluency,ignores_hard_constraint\n"
        "study-0,ann-a,5,5,5,5,5,0\n"
        "study-1,ann-a,2,2,2,3,3,1\n"
    )
    response = _post_preview(admin_client, rows, mode="annotations", name="study", k=None)
    assert response.status_code == 200
    preview = response.context["preview"]
    assert preview.ok, preview.errors
    assert ("New annotator accounts", "ann-a") in preview.facts
    assert Annotation.objects.count() == 0
    admin_client.post(reverse("upload_confirm"), {"token": response.context["token"]})
    assert Annotation.objects.filter(item__batch__name="study").count() == 2
    assert Item.objects.get(item_id="study-1").n_annotations == 1


def test_annotation_upload_with_a_broken_cap_shows_the_row(admin_client):
    make_batch("study", n_items=1)
    rows = (
        "item_id,annotator,coherence,relevance,instruction_following,safety_compliance,fluency,ignores_hard_constraint\n"
        "study-0,ann-a,5,5,4,5,5,yes\n"
    )
    response = _post_preview(admin_client, rows, mode="annotations", name="study", k=None)
    errors = [str(e) for e in response.context["preview"].errors]
    assert len(errors) == 1 and errors[0].startswith("row 2, column `instruction_following`:")
    assert response.context["token"] == ""


def test_an_admin_has_at_most_a_few_files_waiting(admin_client, upload_dir):
    from annotator.uploads.views import MAX_PENDING

    tokens = [
        _post_preview(admin_client, GOOD, name=f"b{i}").context["token"] for i in range(MAX_PENDING + 2)
    ]
    assert sorted(p.stem for p in upload_dir.glob("*.upload")) == sorted(tokens[-MAX_PENDING:])
    assert list(admin_client.session["pending_uploads"]) == tokens[-MAX_PENDING:]
    response = admin_client.post(reverse("upload_confirm"), {"token": tokens[0]}, follow=True)
    assert "no longer waiting" in response.content.decode()
    admin_client.post(reverse("upload_confirm"), {"token": tokens[-1]})
    assert Batch.objects.get().name == f"b{MAX_PENDING + 1}"


def test_waiting_files_go_through_the_uploads_storage(admin_client, settings):
    """Any Django storage backend can hold the waiting files: here an in-memory one (no disk at all),
    as an S3 bucket would be behind a load balancer."""
    from django.core.files.storage import storages

    settings.STORAGES = {
        **settings.STORAGES,
        "uploads": {"BACKEND": "django.core.files.storage.InMemoryStorage"},
    }
    response = _post_preview(admin_client, GOOD)
    token = response.context["token"]
    assert storages["uploads"].listdir("")[1] == [f"{token}.upload"]
    response = admin_client.post(reverse("upload_confirm"), {"token": token})
    assert response.status_code == 302 and Batch.objects.filter(name="new-batch").exists()
    assert storages["uploads"].listdir("")[1] == []
