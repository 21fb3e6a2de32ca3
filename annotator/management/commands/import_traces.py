"""python manage.py import_traces: a judges command; its code is in annotator/judges/management/commands/."""

from annotator.judges.management.commands.import_traces import Command

__all__ = ["Command"]
