"""python manage.py import_judge_scores: a command of the judges package, in annotator/judges/management/commands/import_judge_scores.py."""

from annotator.judges.management.commands.import_judge_scores import Command

__all__ = ["Command"]
