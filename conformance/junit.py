"""Results as JUnit XML (`--junit FILE`), so that a CI system shows tidemark's verdicts natively.

One test case per thing that holds or not: for `verify`, per spec its model check, conformance and
validation, then per zoo entry and the audit; for `zoo`, per entry; for `conform`, the spec; for
`scenario`, per expectation. A verdict that does not hold is a failure with tidemark's own words.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from junitparser import Failure, JUnitXml, Skipped, TestCase, TestSuite


def case(name: str, group: str, failure: str | None, seconds: float = 0.0, details: str = "") -> TestCase:
    """A test case: passed when `failure` is None, else failed with that message."""
    test = TestCase(name, classname=f"tidemark.{group}", time=round(seconds, 3))
    if failure is not None:
        test.result = [Failure(failure)]
    if details:
        test.system_out = details
    return test


def skipped(name: str, group: str, why: str) -> TestCase:
    test = TestCase(name, classname=f"tidemark.{group}")
    test.result = [Skipped(why)]
    return test


def suite(name: str, cases: Iterable[TestCase]) -> TestSuite:
    result = TestSuite(name)
    for test in cases:
        result.add_testcase(test)
    return result


def write(target: Path, suites: Iterable[TestSuite]) -> Path:
    """The suites as one JUnit XML file, written whole (a temporary file renamed)."""
    xml = JUnitXml("tidemark")
    for each in suites:
        xml.add_testsuite(each)
    temporary = target.with_name(target.name + ".part")
    xml.write(str(temporary), pretty=True)
    temporary.replace(target)
    return target


def zoo_cases(report: Any) -> list[TestCase]:
    """`report`: a ZooReport. An entry fails unless both sides catch its bug."""
    cases = []
    for entry in report.entries:
        missed = [
            f"{side} missed it: {catch.describe()}"
            for side, catch in (("TLC on the spec variant", entry.spec), ("conformance", entry.impl))
            if not catch.caught
        ]
        seconds = entry.spec.seconds + entry.impl.seconds
        details = f"spec: {entry.spec.describe()}\nimpl: {entry.impl.describe()}"
        cases.append(case(entry.name, f"zoo.{entry.protocol}", "; ".join(missed) or None, seconds, details))
    return cases


def conform_case(result: Any) -> TestCase:
    """`result`: a ConformResult (or verify's ConformFigures with its spec's name)."""
    failure = None
    if not result.holds:
        failure = (
            f"{result.mismatches:,} edge mismatches, {result.enabledness_mismatches:,} enabledness"
            f" mismatches, {result.edges_replayed:,}/{result.edges:,} edges replayed"
        )
        if result.examples:
            first = result.examples[0]
            failure += "; first: " + "; ".join([*first.diff, *([first.error] if first.error else [])])
    return case("conform", result.spec, failure, getattr(result, "replay_seconds", 0.0))


def verify_suites(report: Any) -> list[TestSuite]:
    """`report`: a VerifyReport."""
    suites = []
    for spec in report.specs:
        tlc_failure = None if spec.tlc.outcome == "ok" else f"TLC: {spec.tlc.outcome}"
        cases = [case("check", spec.spec, tlc_failure, spec.timings.tlc_seconds)]
        if spec.conformance is None:
            cases.append(skipped("conform", spec.spec, "no mapping or no state graph"))
        else:
            figures = spec.conformance
            failure = None if figures.holds else f"{figures.mismatches:,} edge mismatches"
            cases.append(case("conform", spec.spec, failure, spec.timings.replay_seconds))
        if spec.validation is None:
            cases.append(skipped("validate", spec.spec, "no mapping or no state graph"))
        else:
            walks = spec.validation
            failure = (
                None if walks.holds else f"{len(walks.rejected)} of {walks.traces} walks rejected by TLC"
            )
            cases.append(case("validate", spec.spec, failure, spec.timings.validation_seconds))
        suites.append(suite(spec.spec, cases))
    if report.zoo is not None:
        suites.append(suite("zoo", zoo_cases(report.zoo)))
    if report.audit is not None:
        failure = None if report.audit.holds else "the audit's findings differ from the injected ones"
        suites.append(suite("audit", [case("audit", "audit", failure)]))
    return suites


def scenario_cases(result: Any) -> list[TestCase]:
    """`result`: a ScenarioResult. One case per expectation, and one for the steps themselves."""
    group = f"scenario.{result.name}"
    cases = [case("steps", group, result.failure)]
    for check in result.checks:
        failure = None if check.holds else f"expected {check.expected!r}, got {check.actual!r}"
        cases.append(case(check.path, group, failure))
    return cases
