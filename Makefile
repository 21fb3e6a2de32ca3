# Two commands on a fresh machine:  make demo  |  make test
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3.12 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: install demo test test-fast serve release web worker migrate bench rubric-md browser-deps docs lint clean

$(STAMP): requirements.txt requirements-dev.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $(STAMP)

install: $(STAMP)

migrate: install
	DEBUG=1 $(PY) manage.py migrate --noinput

# Installs, migrates, loads the demo batch and demo users, then serves on $(HOST):$(PORT) with the
# background worker beside it (judge runs started from the page, large uploads): Ctrl-C stops both.
# (A shell without job control starts the worker ignoring Ctrl-C, so the trap ends it.) A worker that
# dies (killed, out of memory: a non-zero exit) is started again, so a job it held is taken over, as
# in production; one that shuts down cleanly (Ctrl-C) is not.
# The printed study and invite links start with the address served (a SITE_URL you set wins). The
# address is kept in var/demo_site_url, so the link commands run from another shell use it too.
DEMO_SITE_URL = $(or $(SITE_URL),http://$(if $(filter 0.0.0.0,$(HOST)),127.0.0.1,$(HOST)):$(PORT))
demo: migrate
	DEBUG=1 SITE_URL=$(DEMO_SITE_URL) $(PY) manage.py load_demo
	DEBUG=1 SITE_URL=$(DEMO_SITE_URL) $(PY) manage.py create_demo_users
	@( trap 'kill -TERM $$child 2>/dev/null; wait $$child 2>/dev/null; exit 0' TERM; \
	  while :; do DEBUG=1 SITE_URL=$(DEMO_SITE_URL) $(PY) manage.py db_worker --no-reload & child=$$!; \
	  wait $$child && break; echo "Background worker stopped; starting it again."; sleep 1; done ) & worker=$$!; \
	trap 'kill -TERM $$worker 2>/dev/null; wait $$worker 2>/dev/null' EXIT; \
	echo "Background worker running; it starts again if it stops. Ctrl-C stops it and the server."; \
	mkdir -p var && echo "$(DEMO_SITE_URL)" > var/demo_site_url; \
	DEBUG=1 SITE_URL=$(DEMO_SITE_URL) $(PY) manage.py runserver $(HOST):$(PORT)

# Chromium for the browser tests comes from Debian's packages; installed when we can.
browser-deps:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    (apt-get update -qq && apt-get install -y -qq chromium >/dev/null) || echo "could not install chromium: browser tests will be skipped"; \
	  else echo "chromium not found: browser tests will be skipped (apt-get install chromium)"; fi; }

# The whole suite: pure statistics, Django, concurrency and browser tests.
test: install browser-deps
	$(PY) -m pytest

test-fast: install
	$(PY) -m pytest -m "not browser and not slow"

# Production serving: gunicorn + whitenoise against DATABASE_URL (needs SECRET_KEY and ALLOWED_HOSTS;
# README "Production"). `make serve` = release + web; on a second app server run `make web` only.
GUNICORN_ARGS ?= --access-logfile - --timeout 120 --graceful-timeout 30
# The access log names the path without its query string and without the Referer: a study link's
# query carries the worker's platform ids (PROLIFIC_PID, SESSION_ID), which stay in the app (docs/crowd.md).
GUNICORN_ACCESS_FORMAT = %(h)s %(l)s %(u)s %(t)s "%(m)s %(U)s %(H)s" %(s)s %(b)s %(L)s "%(a)s"
# gunicorn's gthread worker (annotator/gunicorn_workers.py): GUNICORN_THREADS request threads per worker, so a
# request waiting on a stalled database does not queue the others behind it (they answer 503 at once,
# docs/faults.md); /healthz on threads of its own; gunicorn's own 414/431 under /api/ as problem details.
GUNICORN_WORKER ?= annotator.gunicorn_workers.ThreadWorker
GUNICORN_THREADS ?= 4
serve: release web

# Once per deploy, from one machine: apply migrations.
release: install
	$(PY) manage.py migrate --noinput

# One app server: collect static files (served by whitenoise), then gunicorn with WEB_CONCURRENCY workers
# of GUNICORN_THREADS threads each (one database connection per thread).
web: install
	$(PY) manage.py collectstatic --noinput -v 0
	$(VENV)/bin/gunicorn annotator.wsgi --bind $(HOST):$(PORT) --workers $${WEB_CONCURRENCY:-2} \
	  --worker-class $(GUNICORN_WORKER) --threads $(GUNICORN_THREADS) \
	  --access-logformat '$(GUNICORN_ACCESS_FORMAT)' $(GUNICORN_ARGS)

# The background worker: large uploads and report builds queued by any app server.
worker: install
	$(PY) manage.py db_worker

# Import speed and the rating round trip on SQLite and PostgreSQL (needs PostgreSQL on 127.0.0.1:5432); prints tables.
bench: install
	$(PY) bench/import_bench.py
	$(PY) bench/annotate_bench.py

# The docs/ pages as a site (site/index.html); strict, so a broken link fails the build.
docs: install
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --quiet

# Lint and layout: ruff check (pyflakes, pycodestyle, isort, bugbear, pyupgrade) and ruff format.
lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

rubric-md: install
	$(PY) -m hcs.rubric_markdown > HCS_rubric.md

clean:
	rm -rf $(VENV) var/*.sqlite3* staticfiles .pytest_cache site
