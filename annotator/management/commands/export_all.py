from pathlib import Path

from django.core.management.base import BaseCommand

from annotator.services.backup import installation_export


class Command(BaseCommand):
    help = "Back up the whole installation (users, batches, items, annotations, history, judge scores) to a folder."

    def add_arguments(self, parser):
        parser.add_argument("--out", required=True, type=Path, help="folder to write (created if missing)")

    def handle(self, *args, out: Path, **options):
        counts = installation_export(out_dir=out)
        for label, n in counts.items():
            self.stdout.write(f"{label:32} {n:>10,}")
        self.stdout.write(self.style.SUCCESS(f"Backup written to {out}"))
