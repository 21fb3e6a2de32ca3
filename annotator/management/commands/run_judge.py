"""python manage.py run_judge: a judges command; its code is in annotator/judges/management/commands/."""

from annotator.judges.management.commands.run_judge import Command

__all__ = ["Command"]
