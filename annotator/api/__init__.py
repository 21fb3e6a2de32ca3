"""The HTTP API (``/api/v1/``): one router per resource, calling the same services and selectors
as the pages. ``annotator.api.main.api`` puts them together."""
