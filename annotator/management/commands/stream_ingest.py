"""python manage.py stream_ingest: a streams command; its code is in annotator/streams/management/commands/."""

from annotator.streams.management.commands.stream_ingest import Command

__all__ = ["Command"]
