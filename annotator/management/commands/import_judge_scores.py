"""python manage.py import_judge_scores: a judges command; its code is in annotator/judges/management/commands/."""

from annotator.judges.management.commands.import_judge_scores import Command

__all__ = ["Command"]
