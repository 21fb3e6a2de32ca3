"""``{% annotate_queue %}``: the annotator's batch list, for the home page section."""

from django import template

from annotator.rating.selectors.queue import queue_for_annotator

register = template.Library()


@register.inclusion_tag("annotator/_queue_table.html", takes_context=True)
def annotate_queue(context):
    return {"queue": queue_for_annotator(user=context["request"].user)}
