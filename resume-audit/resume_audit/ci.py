"""An audit's report for a CI job: JUnit XML (what test runners and CI services read: one test
case per fault delivered, failed by the findings it showed, skipped when it could not be
delivered) and a Markdown summary (GitHub's ``$GITHUB_STEP_SUMMARY``): the verdict, each finding
with its fix and the command that shows it again."""
from __future__ import annotations

from xml.etree import ElementTree as ET

from resume_audit.report import Report


def junit(report: Report) -> str:
    suite = ET.Element("testsuite", name="resume-audit", time=f"{report.seconds:.1f}")
    cases = []
    nondet = report.nondeterminism
    cases.append(_case("the run never interrupted is deterministic", "reference",
                       failure=[f.line for f in nondet] or None))
    for f in (f for f in report.uninterrupted if f.kind_class in ("defect", "unseen") and f not in nondet):
        cases.append(_case(f.kind, "reference", failure=[f.line] if f.defect else None,
                           skipped=f.line if not f.defect else None))
    for j, run in enumerate(report.runs, 1):
        for row in run.rows:
            said = [f for f in run.findings if f.values.get("fault") == row.fault.for_report()]
            bad = [f"{f.line} (fix: {f.fix}; again: {report.again(f)})" for f in said
                   if f.defect or f.kind_class == "not durable" or (report.strict and f.kind_class == "lost work")]
            skip = None if row.delivered else "; ".join(f.line for f in said) or "not delivered"
            cases.append(_case(row.fault.describe(), f"run-{j}", failure=bad or None, skipped=skip))
    for case in cases:
        suite.append(case)
    suite.set("tests", str(len(cases)))
    suite.set("failures", str(sum(c.find("failure") is not None for c in cases)))
    suite.set("skipped", str(sum(c.find("skipped") is not None for c in cases)))
    return ET.tostring(suite, encoding="unicode", xml_declaration=True) + "\n"


def _case(name: str, classname: str, failure: list[str] | None = None, skipped: str | None = None) -> ET.Element:
    case = ET.Element("testcase", name=name, classname=classname)
    if failure:
        ET.SubElement(case, "failure", message=failure[0][:200]).text = "\n".join(failure)
    elif skipped:
        ET.SubElement(case, "skipped", message=skipped[:200])
    return case


def markdown(report: Report) -> str:
    lines = [f"### resume-audit: {report.verdict.split(':')[0]}", "", report.verdict, "",
             f"`{' '.join(report.command)}`: {report.faults} faults delivered in {len(report.runs)} runs "
             f"(exit code {report.exit_code}).", ""]
    if report.findings:
        lines += ["| # | finding | fix | again |", "|---|---|---|---|"]
        for i, f in enumerate(report.findings, 1):
            again = report.again(f)
            lines.append(f"| {i} | **{f.kind}** ({f.kind_class}): {_cell(f.line)} | {_cell(f.fix or '-')} | "
                         f"{f'`{_cell(again)}`' if again else '-'} |")
        lines.append("")
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
