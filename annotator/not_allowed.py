"""A page for a form's address opened by GET (a refresh, a bookmark): browsers show a bare 405 as a blank
error page. Only empty 405s outside the API are replaced (the API answers problem details)."""

from __future__ import annotations

from django.shortcuts import render


class NotAllowedPageMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if response.status_code != 405 or response.content or request.path.startswith("/api/"):
            return response
        page = render(request, "405.html", {"allowed": response.get("Allow", "")}, status=405)
        page["Allow"] = response.get("Allow", "")
        return page
