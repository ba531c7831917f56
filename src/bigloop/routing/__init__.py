"""Model wrappers that choose, per turn, which model answers: cascades, fallbacks,
ensembles and learned routes (`cascade`), over the atoms' cards (`route`)."""
