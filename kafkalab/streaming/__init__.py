"""Streaming on the cluster's extra hosts: `spark` (PySpark jobs submitted to the Spark
hosts, their checkpoints), `ksqldb_client` (ksqlDB's REST API), `expected` (what a job
should produce from its input, and the comparison with what it wrote).
"""
