"""The runtime of one run: the run context planners act through (`context`), and the
making of calls (`call`)."""
