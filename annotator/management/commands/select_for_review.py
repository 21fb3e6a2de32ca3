"""python manage.py select_for_review: a judges command; its code is in annotator/judges/management/commands/."""

from annotator.judges.management.commands.select_for_review import Command

__all__ = ["Command"]
