"""The driver JVM's class archive is used only while it matches the jars it was recorded with."""

from __future__ import annotations

import pytest

from pipelines import jvm_archive


@pytest.fixture
def archive(tmp_path, monkeypatch):
    path = tmp_path / "driver-classes.jsa"
    monkeypatch.setattr(jvm_archive, "ARCHIVE", path)
    monkeypatch.setattr(jvm_archive, "KEY_FILE", tmp_path / "driver-classes.key")
    return path


def test_no_archive_no_options(archive):
    assert jvm_archive.java_options() == ""


def test_a_current_archive_is_used(archive):
    archive.write_bytes(b"x")
    jvm_archive.KEY_FILE.write_text(f"abc {jvm_archive.archive_key('abc')}\n")
    options = jvm_archive.java_options()
    assert f"-XX:SharedArchiveFile={archive}" in options and "-Xshare:auto" in options


@pytest.mark.parametrize("key", ["abc 0123", "abc", ""])
def test_a_stale_or_broken_key_is_ignored(archive, key):
    archive.write_bytes(b"x")
    jvm_archive.KEY_FILE.write_text(key)
    assert jvm_archive.java_options() == ""


def test_the_key_follows_the_classpath(archive, monkeypatch, tmp_path):
    jar = tmp_path / "a.jar"
    jar.write_bytes(b"12")
    monkeypatch.setattr(jvm_archive.jars, "classpath", lambda: [jar])
    before = jvm_archive.archive_key("abc")
    jar.write_bytes(b"123")  # a different jar of the same name
    assert jvm_archive.archive_key("abc") != before
    assert jvm_archive.archive_key("abd") != jvm_archive.archive_key("abc")


def test_a_folder_with_a_space_gets_no_options(tmp_path, monkeypatch):
    spaced = tmp_path / "with space"
    spaced.mkdir()
    monkeypatch.setattr(jvm_archive, "ARCHIVE", spaced / "driver-classes.jsa")
    monkeypatch.setattr(jvm_archive, "KEY_FILE", spaced / "driver-classes.key")
    jvm_archive.ARCHIVE.write_bytes(b"x")
    jvm_archive.KEY_FILE.write_text(f"abc {jvm_archive.archive_key('abc')}\n")
    assert jvm_archive.java_options() == ""
