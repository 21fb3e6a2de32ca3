"""Offline-annotation uploads: messages that tell an admin what is wrong, once, and keep their input."""

import html as html_lib
import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from annotator.counted import counted
from annotator.models import Annotation, Batch
from tests.factories import make_batch, upload_storage_at

pytestmark = pytest.mark.django_db

HEADER = "item_id,annotator,coherence,relevance,instruction_following,safety_compliance,fluency\n"


@pytest.fixture(autouse=True)
def upload_dir(settings, tmp_path):
    upload_storage_at(settings, tmp_path / "uploads")


@pytest.fixture
def admin_client(client, admin_user):
    client.force_login(admin_user)
    return client


def _preview(client, content: str, *, name: str, k: str = "3"):
    upload = SimpleUploadedFile("annotations.csv", content.encode(), content_type="text/csv")
    response = client.post(
        reverse("upload_preview"), {"mode": "annotations", "name": name, "k": k, "file": upload}
    )
    return response, html_lib.unescape(response.content.decode())


def _facts(page: str) -> dict[str, str]:
    rows = re.findall(r"<tr><th>(.*?)</th><td>(.*?)</td></tr>", page)
    return dict(rows)


def test_a_file_on_another_scale_gets_one_message_not_one_per_cell(admin_client):
    make_batch("ten-point", n_items=2)
    rows = "".join(f"ten-point-{i},a{j},{i * 3},7,10,0,8\n" for i in range(2) for j in range(2))
    response, page = _preview(admin_client, HEADER + rows, name="ten-point")
    assert response.status_code == 200
    assert "is outside 1–5" not in page
    assert page.count("looks like it uses another scale") == 1
    assert "The scores run from 0 to 10: 18 score cells are outside the rubric's 1–5 scale" in page
    assert "1 problem: nothing will be saved" in page
    assert Annotation.objects.count() == 0


def test_one_stray_score_is_still_reported_on_its_cell(admin_client):
    make_batch("typo", n_items=2)
    _, page = _preview(admin_client, HEADER + "typo-0,a,3,3,3,3,33\ntypo-1,a,3,3,3,3,3\n", name="typo")
    assert "Fluency: 33 is outside 1–5." in page
    assert "another scale" not in page


def test_summary_counts_annotators_and_existing_items_even_when_rows_have_problems(admin_client):
    make_batch("known", n_items=3)
    content = HEADER + "known-0,ann1,3,3,3,3,3\nknown-1,ann2,3,3,3,3,9\nbrand-new,ann1,3,3,3,3,3\n"
    _, page = _preview(admin_client, content, name="known")
    facts = _facts(page)
    assert facts["Annotators"] == "ann1, ann2"
    assert facts["Items already in the batch"] == "2"
    assert facts["New items"] == "1"


def test_a_batch_name_close_to_an_existing_one_is_questioned(admin_client):
    make_batch("Route planning, week 12", n_items=1)
    content = HEADER + "x-1,ann1,3,3,3,3,3\n"
    _, page = _preview(admin_client, content, name="Route planing, week 12")
    assert (
        "There is no batch “Route planing, week 12”, so saving creates a new one. "
        "Did you mean “Route planning, week 12”?" in page
    )
    _, page = _preview(admin_client, content, name="Something else entirely")
    assert "Did you mean" not in page
    # The upload page offers the existing names.
    upload = admin_client.get(reverse("upload")).content.decode()
    assert 'list="batch-names"' in upload and '<option value="Route planning, week 12">' in upload


def test_upload_another_file_keeps_the_batch_name_and_k(admin_client):
    _, page = _preview(admin_client, HEADER + "x,a,9,9,9,9,9\n", name="Week 12 offline", k="4")
    link = re.search(r'<a class="button" href="([^"]+)">Upload another file</a>', page).group(1)
    assert link.startswith(reverse("upload") + "?") and link.endswith("#upload-annotations")
    form = admin_client.get(link).content.decode()
    section = form[form.index('id="upload-annotations"') :]
    assert 'value="Week 12 offline"' in section and 'name="k" value="4"' in section
    assert Batch.objects.filter(name="Week 12 offline").count() == 0


def test_the_upload_page_names_the_gold_columns(admin_client):
    """Gold rows were accepted but the page listed only the item columns, so nobody found them there."""
    from annotator.uploads.files.gold_columns import KINDS, MET, PREFIX, SETTINGS
    from hcs.rubric import Rubric

    page = admin_client.get(reverse("upload")).content.decode()
    batch_part = page[page.index('id="upload-batch"') : page.index('id="upload-annotations"')]
    dimensions = Rubric.default().dimension_keys
    for column in (f"{PREFIX}{dimensions[0]}", f"{PREFIX}{dimensions[-1]}", *set(SETTINGS) - {MET}):
        assert f"<code>{column}</code>" in batch_part, column
    assert all(f"<code>{kind}</code>" in batch_part for kind in KINDS)


def test_the_saved_message_counts_the_gold_items_the_confirm_button_counted(admin_client):
    """The confirm button said 'save 4 rows' and the message 'created with 2 items': the two gold
    rows were saved but not named."""
    gold = ",4,4,4,5,4"
    content = (
        "item_id,prompt,response,gold_coherence,gold_relevance,gold_instruction_following,"
        "gold_safety_compliance,gold_fluency,gold_kind\n"
        "a,P,R,,,,,,\nb,P,R,,,,,,\n"
        f"t,P,R{gold},training\nc,P,R{gold},check\n"
    )
    upload = SimpleUploadedFile("items.csv", content.encode(), content_type="text/csv")
    preview = admin_client.post(
        reverse("upload_preview"), {"mode": "batch", "name": "golden", "k": "3", "file": upload}
    )
    page = preview.content.decode()
    assert "Confirm and save 4 rows" in page, page[:3000]
    token = re.search(r'name="token" value="([^"]+)"', page).group(1)
    done = html_lib.unescape(
        admin_client.post(reverse("upload_confirm"), {"token": token}, follow=True).content.decode()
    )
    assert "Batch “golden” created with 2 items and 2 gold items (1 training, 1 check)." in done


def test_the_saved_message_counts_one_item_in_the_singular(admin_client):
    """The message read "created with 1 items" (and "1 gold items")."""
    content = "item_id,prompt,response,gold_coherence,gold_relevance,gold_instruction_following,"
    content += "gold_safety_compliance,gold_fluency,gold_kind\na,P,R,,,,,,\nt,P,R,4,4,4,5,4,training\n"
    upload = SimpleUploadedFile("items.csv", content.encode(), content_type="text/csv")
    preview = admin_client.post(
        reverse("upload_preview"), {"mode": "batch", "name": "single", "k": "3", "file": upload}
    )
    token = re.search(r'name="token" value="([^"]+)"', preview.content.decode()).group(1)
    done = html_lib.unescape(
        admin_client.post(reverse("upload_confirm"), {"token": token}, follow=True).content.decode()
    )
    assert "Batch “single” created with 1 item and 1 gold item (1 training)." in done


def test_counted_agrees_with_its_number():
    assert [counted(n, "row", "rows") for n in (0, 1, 2)] == ["0 rows", "1 row", "2 rows"]
    assert counted(1234, "row", "rows", grouped=True) == "1,234 rows"
