"""python manage.py import_traces: a command of the judges package, in annotator/judges/management/commands/import_traces.py."""

from annotator.judges.management.commands.import_traces import Command

__all__ = ["Command"]
