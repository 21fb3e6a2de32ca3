from django.apps import AppConfig


class AnnotatorConfig(AppConfig):
    name = "annotator"
    verbose_name = "Human evaluation"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Report sections register themselves with the report selector on import.
        import annotator.selectors.judges  # noqa: F401
