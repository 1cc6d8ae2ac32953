import random

from chispa import assert_df_equality

from overlay.instance.ids import with_dense_id


def test_dense_ids_follow_the_order_across_many_partitions(spark):
    rng = random.Random(5)
    keys = rng.sample(range(10**9), 2000)
    frame = spark.createDataFrame([(f"k{k:010d}",) for k in keys], "key string").repartition(7)
    numbered = with_dense_id(frame, ["key"], "id")
    expected = spark.createDataFrame(
        [(key, i) for i, key in enumerate(sorted(f"k{k:010d}" for k in keys))], "key string, id long"
    )
    assert_df_equality(numbered.select("key", "id"), expected, ignore_row_order=True, ignore_nullable=True)
