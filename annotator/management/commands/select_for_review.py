"""python manage.py select_for_review: a command of the judges package, in annotator/judges/management/commands/select_for_review.py."""

from annotator.judges.management.commands.select_for_review import Command

__all__ = ["Command"]
