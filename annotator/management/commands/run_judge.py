"""python manage.py run_judge: a command of the judges package, in annotator/judges/management/commands/run_judge.py."""

from annotator.judges.management.commands.run_judge import Command

__all__ = ["Command"]
