"""Failover: faults injected into a running cluster, and scenarios that play them under load
and judge the outcome by Kafka's own criterion (every acknowledged record consumed).

`faults` (kill, stop, start, pause, resume, isolate, heal; `isolation` holds isolate's
nftables rules), `scenario` (a scenario file's
model and the shipped catalog), `runner` (one run, start to verdict) with its parts:
`session` (what they share), `schedule` (the fault schedule and its timed waits),
`watch` (leaders and ISRs over time), `traffic` (the recording producer and the read-back),
`delivery` (lost and duplicated records), `forensics` (who wrote a duplicate, from the
log), `verdict` (the result against the expectation, and the report).
"""
