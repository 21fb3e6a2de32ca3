from django.contrib import admin

from annotator.models import (
    Annotation,
    AnnotationRevision,
    Assignment,
    Batch,
    Item,
    Score,
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
