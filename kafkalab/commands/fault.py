"""`kafkalab fault ...` and `kafkalab scenario ...`: fault injection and verdicts."""

import typer

fault_app = typer.Typer(help="Inject faults: kill, pause, isolate, heal.", no_args_is_help=True)
scenario_app = typer.Typer(
    help="Failover scenarios with a no-data-loss verdict.", no_args_is_help=True
)
