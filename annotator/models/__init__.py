"""Database models, one module per concern; import them from here."""

from annotator.judges.models.calibration_set import CalibrationSet
from annotator.judges.models.judge import (
    Judge,
    JudgeCriterionScore,
    JudgeFailure,
    JudgeScore,
    PairwiseVerdict,
)
from annotator.judges.models.judge_call import JudgeCall
from annotator.judges.models.review_draw import ReviewDraw, ReviewDrawItem
from annotator.models.adjudication import Adjudication, AdjudicatorGrant
from annotator.models.annotation import Annotation, AnnotationRevision, Score
from annotator.models.api_token import ApiToken
from annotator.models.assignment import Assignment
from annotator.models.batch import Batch, Item
from annotator.models.job import Job
from annotator.models.quality import (
    AnnotatorStanding,
    GoldAnswer,
    GoldItem,
    QualityRule,
)
from annotator.models.report_cache import ReportCache
from annotator.sessions import UserSession  # the session model lives with its store
from annotator.streams.models import (
    Stream,
    StreamAlert,
    StreamChange,
    StreamWebhookDelivery,
    StreamWindowStat,
    Trace,
    TraceScore,
)
from annotator.studies.models import (
    AccountScope,
    Enrolment,
    InviteLink,
    RateBucket,
    SignInLink,
    StudyLink,
)
from annotator.studies.prolific.models import ProlificBonus, ProlificReturnRequest, ProlificWebhookEvent

__all__ = [
    "AccountScope",
    "Adjudication",
    "AdjudicatorGrant",
    "Annotation",
    "AnnotationRevision",
    "AnnotatorStanding",
    "ApiToken",
    "Assignment",
    "Batch",
    "CalibrationSet",
    "Enrolment",
    "GoldAnswer",
    "GoldItem",
    "InviteLink",
    "Item",
    "Job",
    "Judge",
    "JudgeCall",
    "JudgeCriterionScore",
    "JudgeFailure",
    "JudgeScore",
    "PairwiseVerdict",
    "ProlificBonus",
    "ProlificReturnRequest",
    "ProlificWebhookEvent",
    "QualityRule",
    "RateBucket",
    "ReportCache",
    "ReviewDraw",
    "ReviewDrawItem",
    "Score",
    "SignInLink",
    "Stream",
    "StreamAlert",
    "StreamChange",
    "StreamWebhookDelivery",
    "StreamWindowStat",
    "StudyLink",
    "Trace",
    "TraceScore",
    "UserSession",
]
