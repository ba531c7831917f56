"""The runtime of one run: the run context planners act through (`context`) and its parts
— the transcript (`transcript`), the meter (`meter`), the call runner (`runner`) — and
the making of calls (`calls`, `call`)."""
