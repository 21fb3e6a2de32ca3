"""Read-only checks of uploads against what is stored: the previews and the plan an import carries out."""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field

from django.contrib.auth import get_user_model

from annotator.models import Annotation, Assignment, Batch, Item
from annotator.models.batch import MIN_K
from annotator.uploads.files.annotation_file import (
    CONSTRAINTS_MET,
    ParsedAnnotations,
    parse_annotation_file,
)
from annotator.uploads.files.batch_file import ParsedBatch, parse_batch_file
from annotator.uploads.files.checks import k_errors, name_errors, rubric_errors
from annotator.uploads.files.errors import RowError
from hcs.rubric import Rubric


@dataclass
class AnnotationImportPlan:
    batch_name: str
    batch: Batch | None  # None: the import creates it
    k: int
    rubric: Rubric
    parsed: ParsedAnnotations
    errors: list[RowError]
    new_items: list[str] = field(default_factory=list)  # item_ids, file order
    existing_items: dict[str, int] = field(default_factory=dict)  # item_id -> pk
    new_users: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors


def batch_names() -> list[str]:
    """Every batch's name, for the upload page to offer (offline annotations join a batch by name)."""
    return list(Batch.objects.order_by("name").values_list("name", flat=True))


def batch_by_name(name: str) -> Batch | None:
    return Batch.objects.filter(name=(name or "").strip()).first()


def batch_settings_errors(*, name: str, k: int | None, rubric: Rubric) -> list[RowError]:
    """Why ``name``, ``k`` and ``rubric`` cannot make a new batch (empty when they can). Reads the database."""
    errors = name_errors(name)
    if not errors and batch_by_name(name) is not None:
        errors.append(
            RowError(
                None, None, f"A batch named \u201c{name.strip()}\u201d already exists; choose another name."
            )
        )
    return errors + k_errors(k) + rubric_errors(rubric)


def batch_file_errors(*, name: str, k: int | None, rubric: Rubric, parsed: ParsedBatch) -> list[RowError]:
    """Every reason a parsed batch file cannot become the new batch ``name``: the one list of checks
    that both the upload preview and the save (``batch_import``, inside its transaction) run."""
    errors = batch_settings_errors(name=name, k=k, rubric=rubric)
    if parsed.row_count == 0 and not parsed.errors:
        errors.append(RowError(None, None, "The file has no items."))
    return errors + list(parsed.errors)


def annotation_import_plan(
    *,
    data: bytes,
    filename: str,
    batch_name: str,
    k: int | None = None,
    rubric: Rubric | None = None,
) -> AnnotationImportPlan:
    """Parse the file with the batch's rubric and check it against the database.

    Raises ``FileRefused`` when the file cannot be read at all.
    """
    name = (batch_name or "").strip()
    batch = batch_by_name(name)
    errors: list[RowError] = []
    errors.extend(name_errors(name))
    if batch is not None:
        used = batch.rubric_obj
        if rubric is not None and rubric.to_dict() != batch.rubric:
            errors.append(
                RowError(
                    None,
                    None,
                    f"Batch \u201c{name}\u201d uses the rubric \u201c{used.title}\u201d; "
                    "leave out the rubric option or give the same rubric.",
                )
            )
        k_value = batch.k
    else:
        used = rubric or Rubric.default()
        k_value = MIN_K if k is None else k
        errors.extend(k_errors(k_value) + rubric_errors(used))
    parsed = parse_annotation_file(data, rubric=used, filename=filename)
    errors.extend(parsed.errors)
    if parsed.ok and not parsed.annotations:
        errors.append(RowError(None, None, "The file has no annotations."))
    plan = AnnotationImportPlan(name, batch, k_value, used, parsed, errors)
    if parsed.ok:
        _check_against_database(plan)
    return plan


def _check_against_database(plan: AnnotationImportPlan) -> None:
    parsed = plan.parsed
    stored = {}
    if plan.batch is not None:
        stored = {
            row["item_id"]: row
            for row in Item.objects.filter(batch=plan.batch, item_id__in=list(parsed.items)).values(
                "pk", "item_id", "prompt", "response", "system_id", "constraints"
            )
        }
    for item_id, record in parsed.items.items():
        item = stored.get(item_id)
        if item is None:
            plan.new_items.append(item_id)
            for name in ("prompt", "response"):
                if not str(record.get(name, "")).strip():
                    plan.errors.append(
                        parsed.error(
                            record["row"],
                            name,
                            f"is empty, and item `{item_id}` is not in the batch "
                            "yet, so the file must give its prompt and response",
                        )
                    )
            continue
        plan.existing_items[item_id] = item["pk"]
        for name in ("prompt", "response", "system_id"):
            given = str(record.get(name, "")).strip()
            if given and given != item[name].strip():
                plan.errors.append(
                    parsed.error(record["row"], name, f"differs from the stored {name} of item `{item_id}`")
                )
    _check_constraint_answers(plan, stored)
    User = get_user_model()
    names = parsed.annotators
    users = dict(User.objects.filter(username__in=names).values_list("username", "pk"))
    plan.new_users = [n for n in names if n not in users]
    if plan.existing_items and users:
        pairs = set(
            Annotation.objects.filter(
                item_id__in=plan.existing_items.values(), annotator_id__in=users.values()
            ).values_list("item_id", "annotator_id")
        )
        leased = set(
            Assignment.objects.filter(
                item_id__in=plan.existing_items.values(),
                annotator_id__in=users.values(),
                state=Assignment.State.LEASED,
            ).values_list("item_id", "annotator_id")
        )
        for row in parsed.annotations:
            key = (plan.existing_items.get(row.item_id), users.get(row.annotator))
            if key in pairs:
                plan.errors.append(
                    parsed.error(
                        row.row,
                        "annotator",
                        f"`{row.annotator}` already has an annotation for item "
                        f"`{row.item_id}` in batch \u201c{plan.batch_name}\u201d",
                    )
                )
            elif key in leased:
                plan.errors.append(
                    parsed.error(
                        row.row,
                        "annotator",
                        f"`{row.annotator}` is rating item `{row.item_id}` in "
                        "the browser right now; import after they submit or release it",
                    )
                )
    plan.errors.sort(key=lambda e: e.sort_key)


def _check_constraint_answers(plan: AnnotationImportPlan, stored: dict[str, dict]) -> None:
    """Per-constraint answers must give one answer per hard constraint of their item."""
    parsed = plan.parsed
    for row in parsed.annotations:
        if not row.constraints_met:
            continue
        item = stored.get(row.item_id) or parsed.items.get(row.item_id) or {}
        constraints = item.get("constraints") or []
        if len(row.constraints_met) != len(constraints):
            plan.errors.append(
                parsed.error(
                    row.row,
                    CONSTRAINTS_MET,
                    f"gives {len(row.constraints_met)} answer(s) but item "
                    f"`{row.item_id}` has {len(constraints)} hard constraint(s)",
                )
            )


# ---------------------------------------------------------------------------- upload preview
MAX_ERRORS_SHOWN = 1000
PREVIEW_ROWS = 5
LONG_TEXT = {"prompt", "response", "context", "expected_output", "comment"}


@dataclass
class UploadPreview:
    """What the upload page shows before anything is saved."""

    mode: str  # "batch" or "annotations"
    filename: str
    format: str
    batch_name: str
    k: int | None
    rubric: Rubric
    row_count: int
    errors: list[RowError]
    facts: list[tuple[str, str]]  # (label, value) lines of the summary
    headers: list[str]
    rows: list[list[str]]
    warnings: list[str] = field(default_factory=list)  # worth a look, but nothing wrong

    @property
    def ok(self) -> bool:
        return not self.errors

    @property
    def table(self) -> list[list[tuple[str, str, bool]]]:
        """The first rows as (column, text, is_long_text) cells for the template."""
        return [[(h, cell, h in LONG_TEXT) for h, cell in zip(self.headers, row)] for row in self.rows]

    @property
    def errors_shown(self) -> list[RowError]:
        return self.errors[:MAX_ERRORS_SHOWN]

    @property
    def errors_hidden(self) -> int:
        return max(0, len(self.errors) - MAX_ERRORS_SHOWN)


def batch_upload_preview(
    *, data: bytes, filename: str, name: str, k: int, rubric: Rubric | None
) -> UploadPreview:
    rubric = rubric or Rubric.default()
    parsed = parse_batch_file(data, filename=filename, rubric=rubric)
    errors = batch_file_errors(name=name, k=k, rubric=rubric, parsed=parsed)
    systems = ", ".join(f"{s} ({n})" for s, n in parsed.systems.items()) or "\u2014"
    # Gold rows become gold items, not items to rate: counting them here made "Items" disagree with
    # the systems' counts and with the number the saved batch reports. A gold row with a bad cell is
    # still counted as gold (``gold_marked``), not as an item.
    n_gold = len(parsed.gold_marked)
    facts = [
        ("Items", f"{parsed.row_count - n_gold} to rate" if n_gold else str(parsed.row_count)),
        ("Systems", systems),
        # Counted over the rows that could be read; a file refused at its header has none (not "0 prompts").
        ("Distinct prompts", str(parsed.prompt_count) if not parsed.rows.empty else "\u2014"),
        ("Rubric", rubric.title),
        ("Annotations per item (k)", str(k)),
    ]
    if n_gold:
        facts.append(("Gold items (not rated for agreement)", _gold_kinds(parsed.gold_counts)))
    if parsed.extra_columns:
        facts.append(("Extra columns kept as metadata", ", ".join(parsed.extra_columns)))
    headers = [
        "item_id",
        "system_id",
        "prompt_id",
        "prompt",
        "response",
        "context",
        "expected_output",
        "constraints",
        "conversation",
    ]
    rows = []
    if not parsed.rows.empty:
        for record in parsed.preview_rows(PREVIEW_ROWS):
            turns = record["conversation"]
            record["constraints"] = (
                "; ".join(record["constraints"]) if isinstance(record["constraints"], list) else ""
            )
            record["conversation"] = f"{len(turns)} turns" if isinstance(turns, list) and turns else ""
            rows.append([str(record[h]) for h in headers])
    return UploadPreview(
        "batch",
        filename,
        parsed.format,
        name.strip(),
        k,
        rubric,
        parsed.row_count,
        errors,
        facts,
        headers,
        rows,
    )


def _gold_kinds(counts: dict[str, int]) -> str:
    """ "1 training, 2 check", and the rows whose gold_kind is misspelled (named in the errors)."""
    text = f"{counts['training']} training, {counts['check']} check"
    unknown = sum(n for kind, n in counts.items() if kind not in ("training", "check"))
    return f"{text}, {unknown} of an unknown kind" if unknown else text


def annotation_upload_preview(
    *, data: bytes, filename: str, name: str, k: int | None, rubric: Rubric | None
) -> UploadPreview:
    plan = annotation_import_plan(data=data, filename=filename, batch_name=name, k=k, rubric=rubric)
    parsed = plan.parsed
    errors = list(plan.errors)
    # With problems in the file the database checks did not run: count from what was read.
    existing = len(plan.existing_items)
    if not (plan.existing_items or plan.new_items) and plan.batch is not None:
        existing = Item.objects.filter(batch=plan.batch, item_id__in=list(parsed.items)).count()
    new_items = (
        len(plan.new_items) if (plan.existing_items or plan.new_items) else len(parsed.items) - existing
    )
    facts = [
        ("Annotation rows", str(parsed.row_count)),
        ("Batch", f"{plan.batch_name} ({'exists' if plan.batch else 'will be created'})"),
        ("Rubric", plan.rubric.title),
        ("Annotations per item (k)", str(plan.k)),
        ("Annotators", ", ".join(sorted(parsed.annotator_names)) or "\u2014"),
        ("Items already in the batch", str(existing)),
        ("New items", str(new_items)),
        ("New annotator accounts", ", ".join(plan.new_users) or ("none" if parsed.ok else "\u2014")),
    ]
    dims = list(plan.rubric.dimension_keys)
    headers = ["row", "item_id", "annotator", *dims, "flags", "comment"]
    rows = [
        [
            str(a.row),
            a.item_id,
            a.annotator,
            *[str(a.scores.get(d, "")) for d in dims],
            ", ".join(a.flags),
            a.comment,
        ]
        for a in parsed.annotations[:PREVIEW_ROWS]
    ]
    return UploadPreview(
        "annotations",
        filename,
        parsed.format,
        plan.batch_name,
        plan.k,
        plan.rubric,
        parsed.row_count,
        errors,
        facts,
        headers,
        rows,
        warnings=new_batch_warnings(plan.batch_name),
    )


def new_batch_warnings(name: str) -> list[str]:
    """A batch name that is not in use but close to one that is: probably a typo."""
    name = (name or "").strip()
    if not name or batch_by_name(name) is not None:
        return []
    names = list(Batch.objects.values_list("name", flat=True))
    close = difflib.get_close_matches(name, names, n=3, cutoff=0.75)
    close += [n for n in names if n.casefold() == name.casefold() and n not in close]
    if not close:
        return []
    listed = ", ".join(f"\u201c{n}\u201d" for n in close)
    warning = (
        f"There is no batch \u201c{name}\u201d, so saving creates a new one. Did you mean {listed}? "
        "If so, upload the file again with that name."
    )
    return [warning]
