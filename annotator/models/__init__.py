"""Database models, one module per concern; import them from here."""

from annotator.models.annotation import Annotation, AnnotationRevision, Score
from annotator.models.assignment import Assignment
from annotator.models.batch import Batch, Item
from annotator.models.job import Job
from annotator.models.judge import Judge, JudgeFailure, JudgeScore, PairwiseVerdict

__all__ = ["Annotation", "AnnotationRevision", "Assignment", "Batch", "Item", "Job", "Judge", "JudgeFailure", "JudgeScore", "PairwiseVerdict", "Score"]
