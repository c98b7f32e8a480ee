"""Labs: the lessons a learner takes on a running cluster (labs/NN-name/ in the repo).

`definition` (a lab.yml's models), `catalog` (the labs there are, loaded and checked),
`progress` (the learner's state per lab), `context` (one lab against one running
cluster), `prepare` (the lab's starting state), `checks` (the check kinds and their
registry), `solver` (the reference solution, step by step), `runner` (what `kafkalab lab
...` calls).
"""
