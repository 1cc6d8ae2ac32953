"""Routing on small-world overlays (BeaConvey, DEBS'18 sections 4-5): Po, Pa1, Pie, Scribe and
iScribe, with the hop rules written once (`routing.rules`) and run by two engines
(`routing.engines`): compiled per publication (the default) or as Pregel-style supersteps over
DataFrames."""
