"""A gossip cycle's measures from its rows in memory (`overlay.gossip.measures`: the memory
regime's, no Spark job) are the DataFrame measures' (the spark regime's): the summary, the
coverage per topic, the diffusions' events and the views' links, on states of a compiled
Feverfew run with diffusions that start, match and end."""

import random

import numpy as np
from chispa import assert_df_equality

from overlay.design.baselines import numbered_link_table
from overlay.design.classes import Subscriptions
from overlay.gossip import measures as M
from overlay.gossip.feverfew import FeverfewParams
from overlay.gossip.feverfew_compiled import CompiledFeverfew


def test_the_measures_in_memory_are_the_dataframe_measures(spark):
    draw = random.Random(3)
    pairs = np.asarray(sorted({(v, t) for v in range(80) for t in draw.sample(range(12), draw.randint(1, 4))}))
    csr = Subscriptions.from_pairs(80, pairs)
    simulator = CompiledFeverfew(
        FeverfewParams(seed=3, bubble_start=2, random_view=6, shuffle=3), csr.offsets, csr.topics
    )
    simulator.start()
    sizes = M.sizes_of(csr.topics)
    frame_sizes = M.topic_sizes(
        spark.createDataFrame([tuple(p) for p in pairs.tolist()], "node_id long, topic_id long")
    )
    events = 0
    for cycle in range(1, 9):
        table = simulator.cycle(cycle)
        if cycle not in (2, 5, 8):
            continue
        frame = spark.createDataFrame(table)
        assert M.summary_of(table) == M.cycle_summary(frame)
        assert M.summary_of(table, sent=False) == M.view_summary(frame)
        assert_df_equality(
            spark.createDataFrame(M.coverage_of(table, sizes, cycle)),
            M.topic_coverage(frame, frame_sizes, cycle),
            ignore_row_order=True,
            ignore_nullable=True,
            ignore_column_order=True,
        )
        diffusions = M.diffusion_events(frame, cycle)
        events += diffusions.count()
        assert_df_equality(
            spark.createDataFrame(M.diffusions_of(table, cycle), diffusions.schema),
            diffusions,
            ignore_row_order=True,
            ignore_nullable=True,
        )
        assert_df_equality(
            spark.createDataFrame(numbered_link_table(M.view_link_pairs(table), cycle)),
            M.view_links(frame, cycle),
            ignore_row_order=True,
            ignore_nullable=True,
        )
    assert events > 0, "no diffusion event: the test compares empty tables"
