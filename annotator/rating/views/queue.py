"""The annotator's queue: batches open to them with their own and the batch's progress."""

from django.shortcuts import render
from django.views.decorators.http import require_GET

from annotator.rating.selectors.queue import queue_for_annotator
from annotator.roles import annotator_required


@require_GET
@annotator_required
def queue(request):
    return render(request, "annotator/queue.html", {"queue": queue_for_annotator(user=request.user)})
