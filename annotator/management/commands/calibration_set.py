"""python manage.py calibration_set: a command of the judges package, in annotator/judges/management/commands/calibration_set.py."""

from annotator.judges.management.commands.calibration_set import Command

__all__ = ["Command"]
