from django.contrib import admin

from annotator.models import (
    AccountScope,
    Annotation,
    AnnotationRevision,
    AnnotatorStanding,
    Assignment,
    Batch,
    Enrolment,
    GoldItem,
    InviteLink,
    Item,
    QualityRule,
    Score,
    SignInLink,
    StudyLink,
)


@admin.register(Batch)
class BatchAdmin(admin.ModelAdmin):
    list_display = ("name", "k", "is_open", "one_system_per_prompt", "created_by", "created_at")
    filter_horizontal = ("annotators",)
    search_fields = ("name",)


@admin.register(Item)
class ItemAdmin(admin.ModelAdmin):
    list_display = ("item_id", "batch", "system_id", "prompt_id", "n_annotations")
    list_filter = ("batch",)
    search_fields = ("item_id", "prompt")


class ScoreInline(admin.TabularInline):
    model = Score
    fields = ("dimension", "value")
    readonly_fields = ("dimension", "value")
    extra = 0
    can_delete = False


@admin.register(Annotation)
class AnnotationAdmin(admin.ModelAdmin):
    list_display = ("item", "annotator", "source", "submitted_at")
    list_filter = ("source", "item__batch")
    inlines = [ScoreInline]


admin.site.register(AnnotationRevision)
admin.site.register(Assignment)


@admin.register(Enrolment)
class EnrolmentAdmin(admin.ModelAdmin):
    """Who took part in which batch (platform ids are for payment: admins only)."""

    list_display = ("user", "batch", "platform", "worker_id", "started_at", "consented_at", "end", "ended_at")
    list_filter = ("batch", "end", "platform")
    search_fields = ("user__username", "worker_id")
    readonly_fields = (
        "user",
        "batch",
        "study_link",
        "platform",
        "worker_id",
        "platform_study_id",
        "platform_session_id",
    )


@admin.register(StudyLink, InviteLink, SignInLink)
class LinkAdmin(admin.ModelAdmin):
    """Links are made on the Studies page or by the commands (the token is shown once there); here
    they can be read, and revoked by setting ``revoked_at``."""

    list_display = ("__str__", "created_at", "expires_at", "revoked_at")
    readonly_fields = ("token_hash",)

    def has_add_permission(self, request):
        return False


@admin.register(AccountScope)
class AccountScopeAdmin(admin.ModelAdmin):
    """The batches a link-made account may rate (add a batch here to widen it)."""

    list_display = ("user", "origin")
    list_filter = ("origin",)
    filter_horizontal = ("batches",)
    search_fields = ("user__username",)


@admin.register(QualityRule)
class QualityRuleAdmin(admin.ModelAdmin):
    list_display = (
        "batch",
        "training_items",
        "training_max_mae",
        "check_every",
        "check_warn_below",
        "check_block_below",
        "min_seconds",
        "window",
    )


@admin.register(GoldItem)
class GoldItemAdmin(admin.ModelAdmin):
    list_display = ("item_id", "batch", "kind", "tolerance")
    list_filter = ("batch", "kind")


@admin.register(AnnotatorStanding)
class AnnotatorStandingAdmin(admin.ModelAdmin):
    list_display = ("annotator", "batch", "training", "warned_at", "blocked_at", "excluded", "exclusion_rule")
    list_filter = ("batch", "excluded")
    # Exclusions move item counters: use the report's annotator table, not this form, to change them.
    readonly_fields = ("excluded", "exclusion_rule", "exclusion_reason", "excluded_by", "excluded_at")
