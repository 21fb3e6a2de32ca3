"""The judges package's management commands. Django looks for commands only in an installed app, and
the judges are part of the one app ``annotator`` (its models keep that app label), so each command
joins through a one-line module of the same name in ``annotator/management/commands/``."""
