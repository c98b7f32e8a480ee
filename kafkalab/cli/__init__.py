"""The kafkalab command line (`kafkalab` and `python -m kafkalab` run `main`)."""

from kafkalab.cli.main import app, main

__all__ = ["app", "main"]
