"""python manage.py import_verdicts: a command of the judges package, in annotator/judges/management/commands/import_verdicts.py."""

from annotator.judges.management.commands.import_verdicts import Command

__all__ = ["Command"]
