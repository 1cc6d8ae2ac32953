from pathlib import Path

import pytest

from pipelines.config import (
    DEFAULT_CONFIG_FILE,
    ConfigError,
    LabSettings,
    apply_overrides,
    load_settings,
    parse_settings,
)


def test_shipped_file_spells_out_the_defaults():
    assert load_settings(DEFAULT_CONFIG_FILE) == LabSettings()


def test_unknown_key_is_named_with_allowed_keys_and_a_suggestion():
    with pytest.raises(ConfigError) as error:
        parse_settings({"spark": {"shufle_partitions": 4}}, "lab.yaml")
    message = str(error.value)
    assert "unknown key 'spark.shufle_partitions'" in message
    assert "shuffle_partitions" in message and "master" in message
    assert "Did you mean 'shuffle_partitions'?" in message
    assert "lab.yaml" in message


def test_unknown_top_level_key():
    with pytest.raises(ConfigError, match=r"unknown key 'lakehose'.*Did you mean 'lakehouse'"):
        parse_settings({"lakehose": "x"})


@pytest.mark.parametrize(
    "data, fragment",
    [
        ({"spark": {"shuffle_partitions": "eight"}}, "'spark.shuffle_partitions'"),
        ({"spark": {"shuffle_partitions": 0}}, "greater than or equal to 1"),
        ({"spark": {"log_level": "LOUD"}}, "'spark.log_level'"),
        ({"spark": {"driver_memory": "lots"}}, "'spark.driver_memory'"),
        ({"spark": "local"}, "'spark'"),
    ],
    ids=["string-for-int", "zero-partitions", "bad-level", "bad-memory", "section-not-mapping"],
)
def test_mistyped_values_are_errors(data, fragment):
    with pytest.raises(ConfigError, match=fragment):
        parse_settings(data)


def test_file_errors(tmp_path: Path):
    with pytest.raises(ConfigError, match="does not exist"):
        load_settings(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("spark: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_settings(bad)


def test_flags_override_the_file_and_are_validated(tmp_path: Path):
    file = tmp_path / "lab.yaml"
    file.write_text("lakehouse: /data/lh\nspark:\n  shuffle_partitions: 16\n  conf: {a: '1'}\n")
    settings = apply_overrides(
        load_settings(file), {"spark.shuffle_partitions": 3, "spark.conf": {"b": "2"}, "lakehouse": None}
    )
    assert settings.spark.shuffle_partitions == 3
    assert settings.lakehouse == "/data/lh"
    assert settings.spark.conf == {"a": "1", "b": "2"}
    with pytest.raises(ConfigError, match="command-line flags"):
        apply_overrides(settings, {"spark.shuffle_partitions": -1})
