"""Reading uploaded files: batches of items and offline annotations.

Pure functions from bytes to validated rows or a list of row errors; nothing here touches the
database. The services in ``annotator.uploads.services`` save what these modules accept.
"""

from annotator.uploads.files.errors import FileRefused, ImportRefused, RowError

__all__ = ["FileRefused", "ImportRefused", "RowError"]
