"""Spark works here: a real local[*] session on the installed Java runs a DataFrame job and a
pandas UDF (the engine of the Spark planner uses applyInPandas)."""

from __future__ import annotations

import os
import sys

import pytest

pytestmark = pytest.mark.spark


def test_spark_local_dataframe_and_apply_in_pandas() -> None:
    pandas = pytest.importorskip("pandas")
    from pyspark.sql import SparkSession

    # Python workers must run the same interpreter (the venv has pandas/pyarrow; python3 may not).
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("kafka-placement-smoke")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.memory", "512m")
        .getOrCreate()
    )
    try:
        rows = [(b, i, (b + 1) * 10) for b in range(3) for i in range(4)]
        df = spark.createDataFrame(rows, "broker int, partition int, size long")
        loads = {
            r["broker"]: r["bytes"]
            for r in df.groupBy("broker").sum("size").withColumnRenamed("sum(size)", "bytes").collect()
        }
        assert loads == {0: 40, 1: 80, 2: 120}

        def biggest(pdf: pandas.DataFrame) -> pandas.DataFrame:
            return pdf.nlargest(1, "partition")[["broker", "partition"]]

        top = df.groupBy("broker").applyInPandas(biggest, "broker int, partition int").collect()
        assert sorted((r["broker"], r["partition"]) for r in top) == [(0, 3), (1, 3), (2, 3)]
    finally:
        spark.stop()
