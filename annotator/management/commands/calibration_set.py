"""python manage.py calibration_set: a judges command; its code is in annotator/judges/management/commands/."""

from annotator.judges.management.commands.calibration_set import Command

__all__ = ["Command"]
