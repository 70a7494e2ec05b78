"""`tidemark doctor`: what it reports of this machine, and exit 3 when something tidemark needs is missing."""

from __future__ import annotations

import json

import pytest

from tidemark.conformance.cli.main import main


def test_doctor_reports_every_component(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["doctor", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    found = {c["component"]: c for c in report["components"]}
    assert report["ok"] is True
    harnesses = {"ignite harness 2.18.0", "hazelcast harness 5.7.0"}
    assert {"python", "java", "TLC jar", "spark", "maven"} | harnesses <= set(found)
    assert "17" in found["java"]["detail"] or "21" in found["java"]["detail"]
    assert found["spark"]["detail"].startswith("pyspark ")
    assert all(found[h]["required"] is False for h in harnesses)
    assert "ignite cluster" not in found and "hazelcast cluster" not in found  # started only when asked


def test_without_java_doctor_says_what_to_install_and_exits_3(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    assert main(["doctor"]) == 3
    out = capsys.readouterr().out
    assert "MISSING" in out and "JDK 17" in out
    assert "something tidemark needs is missing" in out


def test_an_unknown_ignite_version_is_reported_not_built(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["doctor", "--json", "--ignite-version", "2.0.0"]) == 0
    found = {c["component"]: c for c in json.loads(capsys.readouterr().out)["components"]}
    assert found["ignite harness 2.0.0"]["ok"] is False
    assert "not built" in found["ignite harness 2.0.0"]["detail"]


def test_an_unknown_hazelcast_version_is_reported_not_built(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["doctor", "--json", "--hazelcast-version", "3.0.0"]) == 0
    found = {c["component"]: c for c in json.loads(capsys.readouterr().out)["components"]}
    assert found["hazelcast harness 3.0.0"]["ok"] is False
    assert "not built" in found["hazelcast harness 3.0.0"]["detail"]
    assert "Maven downloads Hazelcast" in found["hazelcast harness 3.0.0"]["detail"]


@pytest.mark.hazelcast
def test_doctor_starts_and_stops_a_hazelcast_member(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["doctor", "--json", "--hazelcast"]) == 0
    found = {c["component"]: c for c in json.loads(capsys.readouterr().out)["components"]}
    assert found["hazelcast harness 5.7.0"]["ok"] is True
    cluster = found["hazelcast cluster"]
    assert cluster["ok"] is True, cluster["detail"]
    assert cluster["detail"].startswith("Hazelcast 5.7.0: a member started and stopped in ")
    assert "ignite cluster" not in found


def test_a_hazelcast_member_that_cannot_start_is_reported(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    assert main(["doctor", "--json", "--hazelcast"]) == 3  # Java is missing: required
    found = {c["component"]: c for c in json.loads(capsys.readouterr().out)["components"]}
    cluster = found["hazelcast cluster"]
    assert cluster["ok"] is False and cluster["required"] is False
    assert "java" in cluster["detail"].lower()
