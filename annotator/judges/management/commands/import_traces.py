"""python manage.py import_traces FILE --name NAME --map "prompt = input.messages[-1].content" ... [--k 3]"""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotator.cli import load_rubric, read_file, refused
from annotator.counted import counted
from annotator.judges.engine.templates import TemplateError, load_template
from annotator.judges.imports.trace_file import field_name
from annotator.judges.services.traces import batch_import_traces
from annotator.models.batch import MIN_K
from annotator.uploads.files.errors import FileRefused, ImportRefused
from hcs.rubric import Rubric


class Command(BaseCommand):
    help = (
        "Create a batch from a JSONL of traces. Map fields with paths such as "
        "--map 'prompt = input.messages[-1].content' --map 'response = output.output'; "
        "--map 'thread = thread_id' groups a thread's traces into one item with all its turns."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", help="JSONL, one trace per line")
        parser.add_argument("--name", required=True, help="name of the new batch")
        parser.add_argument(
            "--map", action="append", default=[], dest="maps", help="field = path (repeatable)"
        )
        parser.add_argument("--mapping", help="file of field = path lines")
        parser.add_argument(
            "--template",
            help="judge template whose trace mapping to use (fixtures/judge_templates/); --map lines override it",
        )
        parser.add_argument(
            "--k", type=int, default=MIN_K, help=f"annotations each item receives (at least {MIN_K})"
        )
        parser.add_argument("--rubric", help="rubric JSON file (default: hcs/rubrics/hcs.json)")

    def handle(self, *args, file, name, maps, mapping, k, rubric, template=None, **options):
        lines = list(maps)
        if mapping:
            path = Path(mapping)
            if not path.is_file():
                raise CommandError(f"--mapping: {mapping}: no such file.")
            lines.extend(path.read_text(encoding="utf-8").splitlines())
        if template:
            lines = self._template_lines(template, lines)
        if not lines:
            raise CommandError("give the field mapping with --map 'field = path' or --mapping FILE.")
        data = read_file(file)
        try:
            batch = batch_import_traces(
                data=data,
                mapping="\n".join(lines),
                name=name,
                k=k,
                rubric=load_rubric(rubric) or Rubric.default(),
            )
        except (FileRefused, ImportRefused) as exc:
            raise refused(file, exc) from None
        self.stdout.write(
            self.style.SUCCESS(
                f"Batch \u201c{batch.name}\u201d: {counted(batch.items.count(), 'item', 'items')} from traces."
            )
        )

    def _template_lines(self, template: str, lines: list[str]) -> list[str]:
        """The template's trace mapping, with any field the given lines map replaced by theirs; the template's
        optional variables (the hub rules' context) may be absent from a trace."""
        try:
            loaded = load_template(template)
        except TemplateError as exc:
            raise CommandError(f"--template: {exc}") from None
        given = {
            field_name(line.partition("=")[0].strip().removesuffix("?")) for line in lines if "=" in line
        }
        kept = [
            f"{k}{'?' if k in loaded.optional else ''} = {v}"
            for k, v in loaded.trace_mapping.items()
            if field_name(k) not in given
        ]
        return kept + lines
