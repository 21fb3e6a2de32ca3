"""The app's WSGI application with one more URL, ``/bench/bare/``: a bare Django view that answers
"ok" through the same middleware, on the same server, so a benchmark can report the rating round
trip as a multiple of the cheapest request Django can serve (a ratio holds on a busy machine).

Served only by bench/annotate_bench.py (``gunicorn --pythonpath bench bare_wsgi``); the app's own
URLs never include it.
"""

from django.http import HttpResponse
from django.urls import clear_url_caches, path

from annotator.wsgi import application  # noqa: F401  (sets Django up; gunicorn serves this name)


def bare(request):
    return HttpResponse("ok", content_type="text/plain")


import annotator.urls  # after Django is set up

annotator.urls.urlpatterns.append(path("bench/bare/", bare, name="bench_bare"))
clear_url_caches()
