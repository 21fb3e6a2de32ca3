"""Import paths that moved when reports, quality control, uploads and rating each got a package of
their own, and when the core's layers were put in order (``tests/test_import_graph.py``). For one
release the old path still imports (the very module, so patching it patches the new one) and warns
with the new path; ``annotator/__init__.py`` installs the finder."""

import importlib
import importlib.abc
import importlib.util
import sys
import warnings

MOVED = {
    "annotator.exports": "annotator.reports.exports",
    "annotator.exports.csv_safe": "annotator.reports.exports.csv_safe",
    "annotator.exports.export_format": "annotator.reports.exports.export_format",
    "annotator.exports.formats": "annotator.reports.exports.formats",
    "annotator.exports.hf": "annotator.reports.hf",
    "annotator.exports.hf.card": "annotator.reports.hf.card",
    "annotator.exports.hf.hub": "annotator.reports.hf.hub",
    "annotator.exports.hf.parts": "annotator.reports.hf.parts",
    "annotator.exports.hf.rows": "annotator.reports.hf.rows",
    "annotator.exports.hf.writer": "annotator.reports.hf.writer",
    "annotator.exports.methods": "annotator.reports.exports.methods",
    "annotator.exports.report_csv": "annotator.reports.exports.csv_tables",
    "annotator.exports.report_html": "annotator.reports.exports.html_export",
    "annotator.exports.report_json": "annotator.reports.exports.json_export",
    "annotator.exports.report_quality": "annotator.quality.report_block",
    "annotator.forms.rating": "annotator.rating.forms",
    "annotator.forms.uploads": "annotator.uploads.forms",
    "annotator.imports": "annotator.uploads.files",
    "annotator.imports.annotation_file": "annotator.uploads.files.annotation_file",
    "annotator.imports.annotation_template": "annotator.uploads.files.annotation_template",
    "annotator.imports.annotator_list": "annotator.uploads.files.annotator_list",
    "annotator.imports.batch_file": "annotator.uploads.files.batch_file",
    "annotator.imports.checks": "annotator.uploads.files.checks",
    "annotator.imports.columns": "annotator.uploads.files.columns",
    "annotator.imports.errors": "annotator.uploads.files.errors",
    "annotator.imports.file_size": "annotator.uploads.files.file_size",
    "annotator.imports.gold_columns": "annotator.uploads.files.gold_columns",
    "annotator.imports.id_text": "annotator.uploads.files.id_text",
    "annotator.imports.json_text": "annotator.uploads.files.json_text",
    "annotator.imports.reading": "annotator.uploads.files.reading",
    "annotator.imports.row_loop": "annotator.uploads.files.row_loop",
    "annotator.imports.store": "annotator.uploads.files.store",
    "annotator.memory": "annotator.uploads.memory",
    "annotator.selectors.adjudication": "annotator.quality.selectors.adjudication",
    "annotator.selectors.annotation_facts": "annotator.reports.selectors.annotation_facts",
    "annotator.selectors.assignment_admin": "annotator.rating.selectors.assignment_admin",
    "annotator.selectors.batch_progress": "annotator.rating.selectors.batch_progress",
    "annotator.selectors.imports": "annotator.uploads.selectors.plans",
    "annotator.selectors.quality": "annotator.quality.selectors.standing",
    "annotator.selectors.quality_report": "annotator.quality.selectors.report_section",
    "annotator.selectors.quality_time": "annotator.quality.selectors.over_time",
    "annotator.selectors.queue": "annotator.rating.selectors.queue",
    "annotator.selectors.rating_facts": "annotator.rating.selectors.facts",
    "annotator.selectors.rating_progress": "annotator.rating.selectors.progress",
    "annotator.selectors.report_arrays": "annotator.reports.selectors.arrays",
    "annotator.selectors.report_cache": "annotator.reports.selectors.stored",
    "annotator.selectors.report_options": "annotator.reports.selectors.options",
    "annotator.selectors.report_page": "annotator.reports.selectors.page",
    "annotator.selectors.report_rows": "annotator.reports.selectors.rows",
    "annotator.selectors.report_sections": "annotator.reports.selectors.sections",
    "annotator.selectors.rows": "annotator.db_rows",
    "annotator.selectors.reports": "annotator.reports.selectors.batch_report",
    "annotator.selectors.score_packing": "annotator.reports.selectors.score_packing",
    "annotator.selectors.uploads": "annotator.uploads.selectors.preview",
    "annotator.services.adjudication": "annotator.quality.services.adjudication",
    "annotator.services.annotation_imports": "annotator.uploads.services.annotation_imports",
    "annotator.services.annotations": "annotator.rating.services.annotations",
    "annotator.services.assignment": "annotator.rating.services.assignment",
    "annotator.services.assignment_sql": "annotator.rating.services.assignment_sql",
    "annotator.services.batches": "annotator.uploads.services.batches",
    "annotator.services.exclusion": "annotator.quality.services.exclusion",
    "annotator.services.gold": "annotator.quality.services.gold",
    "annotator.services.queue_order": "annotator.rating.services.queue_order",
    "annotator.services.rating_flow": "annotator.rating.services.flow",
    "annotator.services.report_cache": "annotator.reports.services.storing",
    "annotator.services.report_jobs": "annotator.reports.services.jobs",
    "annotator.services.submission_sql": "annotator.rating.services.submission_sql",
    "annotator.services.uploads": "annotator.uploads.services.confirm",
    "annotator.studies.markdown_text": "annotator.markdown_text",
    "annotator.views.adjudication": "annotator.quality.views.adjudication",
    "annotator.views.assignment_admin": "annotator.rating.views.assignment_admin",
    "annotator.views.quality": "annotator.quality.views.exclusion",
    "annotator.views.queue": "annotator.rating.views.queue",
    "annotator.views.rating": "annotator.rating.views.rating",
    "annotator.views.reports": "annotator.reports.views",
    "annotator.views.uploads": "annotator.uploads.views",
}


class MovedFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds an old path in ``MOVED`` and loads it as the module at its new path."""

    def __init__(self):
        self.own_specs = {}

    def find_spec(self, fullname, path=None, target=None):
        if fullname in MOVED:
            return importlib.util.spec_from_loader(fullname, self)
        return None

    def create_module(self, spec):
        new = MOVED[spec.name]
        warnings.warn(f"{spec.name} moved to {new}; import it from there", DeprecationWarning, stacklevel=2)
        module = importlib.import_module(new)
        self.own_specs[new] = module.__spec__
        return module

    def exec_module(self, module):
        # The import system has just set the module's __spec__ to the old path's; the module keeps its own.
        module.__spec__ = self.own_specs.pop(module.__name__)


def install() -> None:
    if not any(isinstance(finder, MovedFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, MovedFinder())
