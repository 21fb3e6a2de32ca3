"""python manage.py import_verdicts: a judges command; its code is in annotator/judges/management/commands/."""

from annotator.judges.management.commands.import_verdicts import Command

__all__ = ["Command"]
