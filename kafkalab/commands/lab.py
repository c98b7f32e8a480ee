"""`kafkalab lab ...`: list, start, check, solve, reset labs (see labs/)."""

import typer

app = typer.Typer(help="Labs for learners: list, start, check, solve, reset.", no_args_is_help=True)
