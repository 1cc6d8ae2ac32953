"""Routing on small-world overlays (BeaConvey, DEBS'18 sections 4-5): Po, Pa1, Pie, Scribe and
iScribe, simulated as Pregel-style supersteps over DataFrames."""
