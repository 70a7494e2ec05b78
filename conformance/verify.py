"""`tidemark verify`, the main job: every spec's standard model checked, conformed and validated.

Per spec (spec/X.tla with its standard model spec/X.cfg):
1. TLC model-checks the model. For a spec with a mapping (tidemark.conformance.mappings.MAPPINGS) this is the
   state-graph dump of `conform`, which then replays every edge and state on the implementation
   (spec -> impl); a spec without one is only model-checked.
2. impl -> spec: seeded random walks of the implementation (conformance/walks.py) are validated by TLC
   as behaviors of the same model (conformance/validate.py).

The VerifyReport keeps every figure apart from the timings in plain fields and the timings in `timings`,
so that the same inputs and seed give the same report apart from `timings` (tests compare them so).
Nothing is printed here, and nothing written but, with `report_dir`, each spec's files for the report
(conformance/artefacts.py): the CLI prints the summary and conformance/report/ writes the HTML.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, computed_field

from tidemark.conformance.artefacts import Artefacts
from tidemark.conformance.audit.check import AuditCheck, audit_check
from tidemark.conformance.campaign import CampaignReport, run_campaign
from tidemark.conformance.conform import ConformResult, conform, default_run_dir
from tidemark.conformance.counterexample import first_mismatch_path, states_by_depth, violation_path
from tidemark.conformance.coverage import Reachability, applicable, campaign_reach, model_reach
from tidemark.conformance.deep import DeepReport, run_deep
from tidemark.conformance.mappings import MAPPINGS, mapping_for
from tidemark.conformance.replay import Mismatch
from tidemark.conformance.runinfo import RunInfo, run_info, spec_inputs
from tidemark.conformance.spark import spark_session
from tidemark.conformance.tlc.config import read_config
from tidemark.conformance.tlc.output import Outcome, TlcResult, Violation, parse_output, tlc_failure
from tidemark.conformance.tlc.runner import TlcOptions, run_tlc
from tidemark.conformance.tlc.values import Record
from tidemark.conformance.traces import Trace
from tidemark.conformance.validate import Rejection, initial_states, validate_traces
from tidemark.conformance.walks import random_walks, random_walks_on_spark
from tidemark.conformance.zoo.entries import ZooReport, run_zoo

# Implementation traces per spec and steps per walk: 100 walks of 30 steps cover every action of the
# standard counter model many times over and validate in one TLC run of a few seconds.
DEFAULT_TRACES = 100
DEFAULT_STEPS = 30
# Steps per walk of the campaign's slice: enough for two crashes, a rejoin and a rebalancing.
CAMPAIGN_STEPS = 100


@contextmanager
def _spark(master: str | None, local: bool) -> Iterator[Any]:
    """A Spark session for the campaign (None: in this process)."""
    if local:
        yield None
        return
    with spark_session(master) as spark:
        yield spark


class TlcFigures(BaseModel):
    """What TLC found on the standard model (its time is in Timings)."""

    outcome: Outcome
    distinct_states: int | None = None
    generated_states: int | None = None
    depth: int | None = None
    error: str | None = None
    violation: Violation | None = None


class ConformFigures(BaseModel):
    """spec -> impl: the replay of the model's state graph on the implementation."""

    master: str | None = Field(description="the Spark master; None when replayed in this process")
    states: int
    edges: int
    edges_replayed: int
    mismatches: int
    enabledness_mismatches: int
    coverage: dict[str, int] = Field(description="edges replayed per action name")
    examples: list[Mismatch] = Field(description="mismatches kept in full, at most 20")
    states_by_depth: list[int] = Field(
        default_factory=list,
        description="distinct states per breadth-first level of the state graph, from the initial states",
    )

    @computed_field  # type: ignore[prop-decorator]
    @property
    def holds(self) -> bool:
        return self.mismatches == 0 and self.enabledness_mismatches == 0 and self.edges_replayed == self.edges


class ValidationFigures(BaseModel):
    """impl -> spec: seeded random walks of the implementation, validated by TLC."""

    traces: int
    steps: int = Field(description="steps per walk at most (a walk ends early where nothing is enabled)")
    seed: int
    accepted: int
    rejected: list[Rejection] = Field(default_factory=list)
    coverage: dict[str, int] = Field(description="steps the walks took per action name")

    @computed_field  # type: ignore[prop-decorator]
    @property
    def holds(self) -> bool:
        return not self.rejected


class Timings(BaseModel):
    """Wall times in seconds: the only part of a report that differs between runs on the same inputs."""

    tlc_seconds: float = 0.0
    load_seconds: float = Field(default=0.0, description="the state graph from dot to Parquet")
    graph_reused: bool = Field(default=False, description="the run directory's graph matched the inputs")
    replay_seconds: float = 0.0
    walk_seconds: float = 0.0
    validation_seconds: float = Field(
        default=0.0, description="TLC's time on the walks and on the initial states they start from"
    )
    total_seconds: float = 0.0


class SpecReport(BaseModel):
    spec: str = Field(description="the spec module, e.g. UpdateCounter")
    path: str
    config: str
    mutant: str | None = None
    tlc: TlcFigures
    conformance: ConformFigures | None = Field(description="None without a mapping or a state graph")
    validation: ValidationFigures | None = Field(description="None without a mapping or a state graph")
    timings: Timings
    artefacts: list[str] = Field(
        default_factory=list,
        description="the files written for this spec (ITF traces, the state graph's Parquet tables, the"
        " replay's summary), relative to the report's directory",
    )

    @computed_field  # type: ignore[prop-decorator]
    @property
    def holds(self) -> bool:
        return (
            self.tlc.outcome == Outcome.OK
            and (self.conformance is None or self.conformance.holds)
            and (self.validation is None or self.validation.holds)
        )


class VerifyReport(BaseModel):
    """The main job's result: one SpecReport per spec, in the order given."""

    specs: list[SpecReport]
    zoo: ZooReport | None = Field(default=None, description="the bug zoo, when it ran")
    audit: AuditCheck | None = Field(default=None, description="the audit of a generated snapshot")
    campaign: CampaignReport | None = Field(default=None, description="the random-walk campaign's slice")
    reachability: list[Reachability] = Field(
        default_factory=list,
        description="the boundary situations each model reached (conformance/coverage.py)",
    )
    deep: DeepReport | None = Field(default=None, description="the deep models (--deep)")
    run: RunInfo | None = Field(default=None, description="versions, machine, date and input digests")
    traces: int = Field(description="implementation walks per spec")
    steps: int
    seed: int
    total_seconds: float = 0.0

    @computed_field  # type: ignore[prop-decorator]
    @property
    def holds(self) -> bool:
        return (
            all(spec.holds for spec in self.specs)
            and (self.zoo is None or self.zoo.all_caught)
            and (self.audit is None or self.audit.holds)
            and (self.campaign is None or self.campaign.holds)
            and (self.deep is None or self.deep.holds)
        )

    def phases(self) -> dict[str, float]:
        """Seconds per spec and phase (the JSON's run.timings)."""
        timings = {}
        for spec in self.specs:
            name = spec.spec + (f" ({spec.mutant})" if spec.mutant else "")
            for phase, seconds in spec.timings.model_dump().items():
                if phase.endswith("_seconds") and phase != "total_seconds":
                    timings[f"{name}: {phase.removesuffix('_seconds')}"] = seconds
        return timings


def _tlc_figures(result: TlcResult) -> TlcFigures:
    return TlcFigures(
        outcome=result.outcome,
        distinct_states=result.distinct_states,
        generated_states=result.generated_states,
        depth=result.depth,
        error=result.error,
        violation=result.violation,
    )


def _conform_figures(result: ConformResult, graph: Path) -> ConformFigures:
    return ConformFigures(
        master=result.master,
        states=result.states,
        edges=result.edges,
        edges_replayed=result.edges_replayed,
        mismatches=result.mismatches,
        enabledness_mismatches=result.enabledness_mismatches,
        coverage=dict(sorted(result.coverage.items())),
        examples=result.examples,
        states_by_depth=states_by_depth(graph),
    )


def _walk_coverage(traces: Sequence[Trace]) -> dict[str, int]:
    """Steps per action name; state 0 of a walk is the initial state, not a step."""
    counts: Counter[str] = Counter()
    for trace in traces:
        for state in trace.states[1:]:
            action = state.get("action")
            name = action.get("name") if isinstance(action, Record) else None
            counts[name if isinstance(name, str) else "?"] += 1
    return dict(sorted(counts.items()))


def _validate_walks(
    spec: Path,
    config: Path,
    mutant: str | None,
    traces: int,
    steps: int,
    seed: int,
    options: TlcOptions,
    master: str | None,
    local: bool,
) -> tuple[ValidationFigures, list[Trace], float, float]:
    """Walk the implementation (the mutant, if any) from the spec's initial states, on Spark unless
    `local`; TLC judges the walks.

    Returns the figures, the walks, the seconds spent walking and TLC's seconds (initial states and the
    walks)."""
    constants = read_config(config).constants
    started = time.monotonic()
    initial = initial_states(spec, config, options)
    walking = time.monotonic()
    if local:
        mapping = mapping_for(spec.stem, constants, mutant)
        walks = random_walks(mapping, initial, count=traces, steps=steps, seed=seed, config=str(config))
    else:
        with spark_session(master) as spark:
            walks = random_walks_on_spark(
                spark,
                spec.stem,
                constants,
                mutant,
                initial,
                count=traces,
                steps=steps,
                seed=seed,
                config=str(config),
            )
    walked = time.monotonic()
    validation = validate_traces(walks, spec, config, options) if walks else None
    figures = ValidationFigures(
        traces=len(walks),
        steps=steps,
        seed=seed,
        accepted=validation.accepted if validation else 0,
        rejected=validation.rejected if validation else [],
        coverage=_walk_coverage(walks),
    )
    tlc_seconds = walking - started + (validation.tlc_seconds if validation else 0.0)
    return figures, walks, round(walked - walking, 3), round(tlc_seconds, 3)


def _check_only(
    spec: Path,
    config: Path,
    options: TlcOptions,
    on_line: Callable[[str], None] | None,
    artefacts: Artefacts | None,
) -> SpecReport:
    """A spec without a mapping: TLC's verdict is all there is."""
    result = parse_output(run_tlc(spec, config, options, on_line), source=f"TLC on {spec}")
    if (error := tlc_failure(result, spec, config)) is not None:
        raise error
    if artefacts is not None and result.violation is not None:
        artefacts.counterexample(violation_path(result, spec, config))
    return SpecReport(
        spec=spec.stem,
        path=str(spec),
        config=str(config),
        tlc=_tlc_figures(result),
        conformance=None,
        validation=None,
        timings=Timings(tlc_seconds=result.seconds, total_seconds=result.seconds),
        artefacts=artefacts.written if artefacts else [],
    )


def verify_spec(
    spec: Path,
    config: Path | None = None,
    *,
    master: str | None = None,
    local: bool = False,
    mutant: str | None = None,
    run_dir: Path | None = None,
    options: TlcOptions | None = None,
    traces: int = DEFAULT_TRACES,
    steps: int = DEFAULT_STEPS,
    seed: int = 0,
    on_line: Callable[[str], None] | None = None,
    on_phase: Callable[[str], None] | None = None,
    wait: bool = True,
    report_dir: Path | None = None,
) -> SpecReport:
    """Check, conform and validate one spec against one model (default: its standard model X.cfg); with
    `report_dir`, its files (ITF traces, the graph's tables, the replay's summary) are written under
    report_dir/artefacts/ for the report to link to."""
    started = time.monotonic()
    config = config or spec.with_suffix(".cfg")
    options = options or TlcOptions()
    artefacts = None
    if report_dir is not None:
        artefacts = Artefacts(report_dir, f"{spec.stem}-{config.stem}" + (f"-{mutant}" if mutant else ""))
    if spec.stem not in MAPPINGS and mutant is None:  # with a mutant, conform says there is no mapping
        if on_phase is not None:
            on_phase(f"{spec.stem}: model checking with TLC (no mapping: nothing to replay)")
        return _check_only(spec, config, options, on_line, artefacts)
    result = conform(
        spec,
        config,
        master=master,
        local=local,
        mutant=mutant,
        run_dir=run_dir,
        options=options,
        on_line=on_line,
        on_phase=(lambda text: on_phase(f"{spec.stem}: {text}")) if on_phase else None,
        wait=wait,
    )
    timings = Timings(
        tlc_seconds=result.tlc_seconds,
        load_seconds=result.load_seconds,
        graph_reused=result.graph_reused,
        replay_seconds=result.replay_seconds,
    )
    graph = run_dir or default_run_dir(spec, config)
    assert result.tlc is not None  # conform always records TLC's result
    if artefacts is not None and result.tlc.violation is not None:
        artefacts.counterexample(violation_path(result.tlc, spec, config))
    conformance = validation = None
    # Without a state graph (TLC found a violation or failed) there is nothing to replay, and walks
    # would be judged by a model that does not hold: TLC's outcome is the report.
    if result.outcome == Outcome.OK:
        conformance = _conform_figures(result, graph)
        if on_phase is not None:
            on_phase(f"{spec.stem}: validating {traces} implementation walks with TLC")
        validation, walks, timings.walk_seconds, timings.validation_seconds = _validate_walks(
            spec, config, mutant, traces, steps, seed, options, master, local
        )
        if artefacts is not None:
            artefacts.graph(graph)
            if (path := first_mismatch_path(result, spec, config, graph, mutant)) is not None:
                artefacts.mismatch(path)
            artefacts.walks(walks)
    timings.total_seconds = round(time.monotonic() - started, 3)
    return SpecReport(
        spec=spec.stem,
        path=str(spec),
        config=str(config),
        mutant=mutant,
        tlc=_tlc_figures(result.tlc),
        conformance=conformance,
        validation=validation,
        timings=timings,
        artefacts=artefacts.written if artefacts else [],
    )


def verify(
    specs: Sequence[Path],
    *,
    master: str | None = None,
    local: bool = False,
    options: TlcOptions | None = None,
    traces: int = DEFAULT_TRACES,
    steps: int = DEFAULT_STEPS,
    seed: int = 0,
    zoo: bool = False,
    campaign_walks: int = 0,
    reach: bool = False,
    deep: bool = False,
    work_dir: Path = Path("runs/verify"),
    report_dir: Path | None = None,
    on_line: Callable[[str], None] | None = None,
    on_phase: Callable[[str], None] | None = None,
    wait: bool = True,
) -> VerifyReport:
    """The main job: every spec's standard model checked, replayed on the implementation (Spark on
    `master`, or in this process when `local`) and `traces` seeded implementation walks validated; with
    `zoo`, every bug of the zoo must be caught by TLC and by conformance (conformance/zoo/entries.py); with
    `campaign_walks`, a seeded slice of the random-walk campaign (conformance/campaign.py); with `reach`,
    the boundary situations each standard model reaches; with `deep`, the deep models
    (conformance/deep.py); last, the audit of a small generated snapshot must find exactly its injected
    divergences (conformance/audit). With `report_dir`, each spec's files go to report_dir/artefacts/."""
    started = time.monotonic()
    info = run_info(path for spec in specs for path in spec_inputs(spec, spec.with_suffix(".cfg")))
    reports = [
        verify_spec(
            spec,
            master=master,
            local=local,
            options=options,
            traces=traces,
            steps=steps,
            seed=seed,
            on_line=on_line,
            on_phase=on_phase,
            wait=wait,
            report_dir=report_dir,
        )
        for spec in specs
    ]
    phase = on_phase or (lambda _: None)
    if reach:
        phase("the boundary situations each standard model reaches")
    reachability = [
        r
        for spec in specs
        if reach
        for r in [model_reach(spec, spec.with_suffix(".cfg"), work_dir, options or TlcOptions(), on_line)]
        if r is not None
    ]
    walks = deep_report = None
    with _spark(master, local) as spark:
        phase("the audit of a generated snapshot")
        checked = audit_check(spark)
        if campaign_walks:
            phase(f"the random-walk campaign: {campaign_walks} seeded walks")
            walks = run_campaign(walks=campaign_walks, steps=CAMPAIGN_STEPS, seed=seed, spark=spark)
            reachability.append(campaign_reach(walks))
        if deep:
            phase("the deep models, exhaustively")
            deep_report = run_deep(work_dir=work_dir / "deep", spark=spark, on_line=on_line)
            reachability += [
                Reachability(
                    model=m.fixed.config, reached=m.reached, applicable=applicable(Path(m.fixed.spec))
                )
                for m in deep_report.models
            ]
    if zoo:
        phase("the bug zoo: TLC on each spec variant, conformance on each mutant")
    return VerifyReport(
        specs=reports,
        zoo=run_zoo(options=options, wait=wait) if zoo else None,
        campaign=walks,
        reachability=reachability,
        deep=deep_report,
        audit=checked,
        run=info,
        traces=traces,
        steps=steps,
        seed=seed,
        total_seconds=round(time.monotonic() - started, 3),
    )
