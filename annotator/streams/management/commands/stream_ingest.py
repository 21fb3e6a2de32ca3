"""python manage.py stream_ingest NAME FILE.jsonl: push a file of traces into a stream, as the API does.

One trace per line, the keys of ``POST /api/v1/streams/{name}/traces``; sent in chunks of the API's
limit. Bad lines are named (line number, trace_id, what is wrong) and the good ones kept; repeats of
a stored trace_id are counted and change nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotator.models import Stream
from annotator.streams.services.ingest import MAX_TRACES, traces_ingest


class Command(BaseCommand):
    help = "Push traces from a JSONL file into a stream (the same checks and sampling as the API)."

    def add_arguments(self, parser):
        parser.add_argument("name", help="the stream's name")
        parser.add_argument("file", help="a JSONL file, one trace per line")

    def handle(self, *args, name: str, file: str, **options):
        stream = Stream.objects.select_related("batch").filter(name=name).first()
        if stream is None:
            raise CommandError(f"No stream named \u201c{name}\u201d.")
        path = Path(file)
        if not path.is_file():
            raise CommandError(f"{file}: no such file.")
        accepted = duplicates = sampled = bad = 0
        chunk: list = []
        lines: list[int] = []

        def send():
            nonlocal accepted, duplicates, sampled, bad
            result = traces_ingest(stream=stream, traces=chunk)
            accepted += result.accepted
            duplicates += result.duplicates
            sampled += len(result.sampled)
            for error in result.errors:
                bad += 1
                line = lines[error["index"]]
                self.stderr.write(
                    f"line {line} (trace_id {error['trace_id']!r}): {'; '.join(error['problems'])}"
                )
            chunk.clear()
            lines.clear()

        with path.open(encoding="utf-8") as handle:
            for number, text in enumerate(handle, start=1):
                if not text.strip():
                    continue
                try:
                    chunk.append(json.loads(text))
                except json.JSONDecodeError as exc:
                    self.stderr.write(f"line {number}: not JSON ({exc.msg})")
                    bad += 1
                    continue
                lines.append(number)
                if len(chunk) == MAX_TRACES:
                    send()
        if chunk:
            send()
        self.stdout.write(
            f"{accepted} accepted, {duplicates} duplicates, {sampled} sampled for human review, {bad} bad."
        )
        if bad:
            raise CommandError(f"{bad} line(s) were not taken (see above); the others were saved.")
