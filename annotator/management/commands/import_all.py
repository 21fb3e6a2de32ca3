from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotator.counted import counted
from annotator.services.backup import RestoreError, installation_import


class Command(BaseCommand):
    help = "Restore a folder written by export_all into an empty installation."

    def add_arguments(self, parser):
        parser.add_argument("folder", type=Path)

    def handle(self, *args, folder: Path, **options):
        try:
            counts = installation_import(in_dir=folder)
        except RestoreError as exc:
            raise CommandError(str(exc)) from exc
        for label, n in counts.items():
            self.stdout.write(f"{label:32} {n:>10,}")
        self.stdout.write(
            self.style.SUCCESS(
                f"Restored {counted(sum(counts.values()), 'row', 'rows', grouped=True)} from {folder}"
            )
        )
