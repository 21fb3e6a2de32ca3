"""The annotator web app (one Django app, label ``annotator``)."""

from annotator.moved import install

install()
