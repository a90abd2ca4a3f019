"""Reports as self-contained HTML pages (``page``: no outside script, style or request): a
``Report`` (a conformance run, a host judge's) by ``report_page``, ``intentref-matrix/1`` by ``matrix_page``.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterable, Sequence
from typing import Any

from intentref.suite.cases.script import ERRORED, FAILED, PASSED, UNSUPPORTED
from intentref.suite.cases.values import Mismatch
from intentref.suite.reports import model
from intentref.suite.reports.badges import badge_for
from intentref.suite.reports.model import LEVELS, OUTCOMES, Report, Row, by_area, counts
from intentref.suite.reports.output import PathLike, write_text


def page(title: str, css: str, body: str, script: str = "") -> str:
    script_tag = f"<script>{script}</script>\n" if script else ""
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{_e(title)}</title>\n<style>{css}</style>\n{script_tag}</head>\n<body>\n{body}\n</body>\n</html>\n"
    )


def _e(value: Any) -> str:
    return html.escape(model.clean_text(value), quote=True)


def _anchor(prefix: str, name: str) -> str:
    # Ids are fixture ids and R-/D- ids already; anything else is made id-safe.
    return prefix + re.sub(r"[^A-Za-z0-9_-]", "_", name)


_CSS = """
:root { --pass: #1a7f37; --fail: #cf222e; --unsup: #6e7781; --err: #8250df; --line: #d0d7de; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: #1f2328; margin: 0;
  background: #f6f8fa; }
main { max-width: 1200px; margin: 0 auto; padding: 24px; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 17px; margin: 0 0 10px; }
section { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 16px 20px; margin: 16px 0; }
dl.info { display: grid; grid-template-columns: max-content 1fr; gap: 2px 16px; margin: 8px 0 0; }
dl.info dt { color: #656d76; } dl.info dd { margin: 0; overflow-wrap: anywhere; }
.totals { display: flex; flex-wrap: wrap; gap: 12px; margin-top: 14px; }
.total { border-radius: 6px; padding: 8px 14px; color: #fff; min-width: 120px; }
.total b { display: block; font-size: 24px; line-height: 1.1; }
.bg-passed { background: var(--pass); } .bg-failed { background: var(--fail); }
.bg-unsupported { background: var(--unsup); } .bg-errored { background: var(--err); }
table { border-collapse: collapse; width: 100%; }
th, td { border-bottom: 1px solid var(--line); padding: 5px 8px; text-align: left; vertical-align: top; }
th { background: #f6f8fa; font-weight: 600; } td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; }
td.zero { color: #afb8c1; }
td.c-passed { background: #dafbe1; color: #116329; font-weight: 600; }
td.c-failed { background: #ffebe9; color: #a40e26; font-weight: 600; }
td.c-unsupported { background: #eaeef2; color: #424a53; font-weight: 600; }
td.c-errored { background: #fbefff; color: #6639ba; font-weight: 600; }
tr.sum td { font-weight: 700; border-top: 2px solid #8c959f; }
.badge { display: inline-block; border-radius: 10px; padding: 0 8px; color: #fff; font-size: 12px; font-weight: 600; }
code, pre { font: 12.5px/1.4 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; background: #f6f8fa; padding: 8px; border-radius: 6px; margin: 6px 0; }
.case { border-left: 4px solid var(--fail); padding: 4px 0 4px 12px; margin: 14px 0; }
.case.errored { border-color: var(--err); }
.case h3 { font-size: 15px; margin: 0 0 2px; } .meta { color: #656d76; font-size: 12.5px; }
table.diff td { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12.5px;
  overflow-wrap: anywhere; }
table.diff { table-layout: fixed; } table.diff th:nth-child(1) { width: 13%; }
table.diff th:nth-child(2) { width: 25%; } table.diff th:nth-child(3), table.diff th:nth-child(4) { width: 31%; }
table.diff td.ptr { color: #0550ae; } table.diff td.exp { background: #e6ffec; } table.diff td.got { background: #ffebe9; }
a { color: #0969da; text-decoration: none; } a:hover { text-decoration: underline; }
.cases a { margin-right: 2px; white-space: nowrap; }
a.o-failed { color: var(--fail); font-weight: 600; } a.o-errored { color: var(--err); font-weight: 600; }
a.o-unsupported { color: var(--unsup); }
td.req { white-space: nowrap; } td.title { width: 30%; } td.outcome { width: 190px; } .badge { white-space: nowrap; margin: 1px 0; }
tr.w-failed td.req { box-shadow: inset 4px 0 var(--fail); } tr.w-errored td.req { box-shadow: inset 4px 0 var(--err); }
tr.w-unsupported td.req { box-shadow: inset 4px 0 var(--unsup); } tr.w-passed td.req { box-shadow: inset 4px 0 var(--pass); }
details > summary { cursor: pointer; font-weight: 600; margin: 6px 0; }
.muted { color: #656d76; }
.flaky { color: #9a6700; font-weight: 600; }
"""


def _info_block(report: Report) -> str:
    items = "".join(f"<dt>{_e(k)}</dt><dd>{_e(model.plain_value(v))}</dd>" for k, v in report.run_info.items())
    totals = "".join(f'<div class="total bg-{name}"><b>{report.tally[name]}</b>{name}</div>' for name in OUTCOMES)
    note = f"<p>{_e(report.note)}</p>" if report.note else ""
    return (
        f"<section><h1>{_e(report.name)} report</h1>{note}"
        f'<p class="muted">{_e(model.closing_line(report))}</p>'
        f'<dl class="info">{items}</dl><div class="totals">{totals}</div></section>'
    )


def _count_td(value: int, name: str) -> str:
    css = f"c-{name}" if value else "zero"
    return f'<td class="n {css}">{value}</td>'


def _areas_table(rows: Sequence[Row]) -> str:
    head = "".join(f'<th class="n">{name}</th>' for name in OUTCOMES)
    level_head = "".join(f"<th>{level}</th>" for level in LEVELS)
    body = []
    eras = [(f"era {era}", era_rows) for era, era_rows in model.by_era(rows).items()]  # D-CNF-070
    for area, area_rows in [*by_area(rows).items(), *eras, ("Total", list(rows))]:
        tally = counts(area_rows)
        levels = "".join(f"<td>{_badges(model.of_level(area_rows, lv), OUTCOMES) or _NONE}</td>" for lv in LEVELS)
        css = ' class="sum"' if area == "Total" else ""  # areas are three capitals, never "Total"
        counted = "".join(_count_td(tally[n], n) for n in OUTCOMES)
        body.append(f'<tr{css}><td>{_e(area)}</td><td class="n">{len(area_rows)}</td>{counted}{levels}</tr>')
    return (
        '<section><h2 id="areas">Areas × outcomes</h2><table class="matrix"><thead><tr><th>Area</th>'
        f'<th class="n">cases</th>{head}{level_head}</tr></thead><tbody>{"".join(body)}</tbody></table></section>'
    )


_NONE = '<span class="muted">–</span>'


def _badges(rows: Sequence[Row], order: Sequence[str]) -> str:
    tally = counts(rows)
    return " ".join(f'<span class="badge bg-{n}">{tally[n]} {n}</span>' for n in order if tally[n])


_SEVERITY: tuple[str, ...] = (ERRORED, FAILED, UNSUPPORTED, PASSED)


def _worst(outcomes: Iterable[str]) -> str:
    seen = set(outcomes)  # a requirement is only as good as its weakest case
    return next((name for name in _SEVERITY if name in seen), UNSUPPORTED)


def _requirement_sort_key(req: str) -> tuple[int, str]:
    order = list(model.requirement_titles())
    return (order.index(req), req) if req in order else (len(order), req)


def _coverage(rows: Sequence[Row]) -> str:
    cited: dict[str, list[Row]] = {}
    for row in rows:
        for req in row.requirements:
            cited.setdefault(req, []).append(row)
    titles = model.requirement_titles()
    body = []
    for req in sorted(cited, key=_requirement_sort_key):
        req_rows = cited[req]
        worst = _worst(r.outcome for r in req_rows)
        # Spaces between the links let a long list wrap; the cases that did not pass come first.
        ordered = sorted(req_rows, key=lambda r: r.outcome == PASSED)
        links = " ".join(
            f'<a class="o-{r.outcome}" href="#{_anchor("case-", r.label)}" title="{_e(r.outcome)}">{_e(r.label)}</a>'
            for r in ordered
        )
        summary = _badges(req_rows, _SEVERITY)
        body.append(
            f'<tr class="w-{worst}" id="{_anchor("req-", req)}"><td class="req"><code>{_e(req)}</code></td>'
            f'<td class="title">{_e(titles.get(req, ""))}</td><td class="outcome">{summary}</td>'
            f'<td class="cases">{links}</td></tr>'
        )
    uncited = [r for r in titles if r not in cited]
    spec_note = f" of {len(titles)} in spec/requirements.md" if titles else ""
    missing = ""
    if uncited:
        missing = (
            f"<details><summary>{len(uncited)} requirements no case cites</summary><p>"
            + ", ".join(f"<code>{_e(r)}</code> {_e(titles[r])}" for r in uncited)
            + "</p></details>"
        )
    return (
        '<section><h2 id="coverage">Requirement coverage</h2>'
        f'<p class="muted">{len(cited)} requirements cited by the cases run{spec_note}.</p>'
        "<table><thead><tr><th>Requirement</th><th>Title</th><th>Outcome</th><th>Cases</th></tr></thead>"
        f"<tbody>{''.join(body)}</tbody></table>{missing}</section>"
    )


def _diff_table(mismatches: Sequence[Mismatch]) -> str:
    body = []
    for m in mismatches:
        if not m.is_pair:
            cells = f'<td colspan="2">{_e(m.message)}</td>'
        else:
            cells = f'<td class="exp">{_e(m.expected)}</td><td class="got">{_e(m.actual)}</td>'
        body.append(f'<tr><td>{_e(m.where)}</td><td class="ptr">{_e(m.path or "/")}</td>{cells}</tr>')
    return (
        '<table class="diff"><thead><tr><th>where</th><th>pointer</th><th>expected</th><th>got</th></tr>'
        f"</thead><tbody>{''.join(body)}</tbody></table>"
    )


def _case_meta(row: Row) -> str:
    cited = ", ".join(f'<a href="#{_anchor("req-", r)}">{_e(r)}</a>' for r in row.requirements)
    decisions = f" · decisions {_e(', '.join(row.decisions))}" if row.decisions else ""
    step = "" if row.failed_step is None else f" · failed at step {row.failed_step}"
    where = f"{_e(row.file)} · " if row.file else ""
    return (
        f'<div class="meta">{where}{_e(row.level)}{step} · {cited}{decisions}</div>'
        f"<p>{_e(row.title)}</p>"
    )


def _what_went_wrong(row: Row) -> str:
    # An errored case's detail; a failed case's mismatches side by side, or a host's violations as lines.
    if row.outcome == FAILED and row.mismatches:
        return _diff_table(row.mismatches)
    return f"<pre>{_e(chr(10).join(row.lines) if row.outcome == FAILED else row.detail)}</pre>"


def _flaky_note(row: Row) -> str:
    # spec: D-CNF-065 -- the outcome of each run of --repeat, when they differ.
    return f'<p class="flaky">flaky: {_e(", ".join(row.flaky))}</p>' if row.flaky else ""


def _trace_block(row: Row) -> str:
    """spec: D-CNF-064 -- the messages a failed or errored case exchanged, folded under it."""
    if row.trace is None:
        return ""
    messages = row.trace.get("messages", [])
    lines = []
    for entry in messages:
        shown = entry["message"] if "truncated" in entry else json.dumps(entry["message"], ensure_ascii=False)
        arrow = "→" if entry["direction"] == "sent" else "←"
        cut = f" (truncated: {entry['truncated']})" if "truncated" in entry else ""
        lines.append(f"{entry['ms']:>9.1f} ms {entry['session']} {arrow} {shown}{cut}")
    if row.trace.get("omitted"):
        lines.append(f"… {row.trace['omitted']} more messages not kept (at most {row.trace['limits']['messages']})")
    return (f'<details class="trace"><summary>Messages exchanged ({len(messages)}, '
            f"{_e(row.trace.get('transport', ''))})</summary><pre>{_e(chr(10).join(lines))}</pre></details>")  # fmt: skip


def _problems(rows: Sequence[Row]) -> str:
    parts = []
    for outcome, heading, anchor in ((FAILED, "Failures", "failures"), (ERRORED, "Errored", "errored")):
        chosen = [r for r in rows if r.outcome == outcome]
        parts.append(f'<section><h2 id="{anchor}">{heading} ({len(chosen)})</h2>')
        if not chosen:
            parts.append(f'<p class="muted">No case {outcome}.</p>')
        for row in chosen:
            parts.append(
                f'<div class="case {outcome}" id="{_anchor("case-", row.label)}"><h3>{_e(row.label)}</h3>'
                f"{_case_meta(row)}{_flaky_note(row)}{_what_went_wrong(row)}{_trace_block(row)}</div>"
            )
        parts.append("</section>")
    return "".join(parts)


def _all_cases(rows: Sequence[Row]) -> str:
    # Failed and errored cases are anchored in their own sections; the rest get theirs here.
    body = []
    for row in rows:
        anchored = row.outcome in (FAILED, ERRORED)
        row_id = "" if anchored else f' id="{_anchor("case-", row.label)}"'
        name = f'<a href="#{_anchor("case-", row.label)}">{_e(row.label)}</a>' if anchored else _e(row.label)
        # Why a case was not asked; what a passing host scenario did that only the reference host avoids.
        note = row.detail if row.outcome == UNSUPPORTED else "; ".join(row.lines) if row.outcome == PASSED else ""
        body.append(
            f"<tr{row_id}><td>{name}</td><td>{_e(row.level)}</td>"
            f'<td><span class="badge bg-{row.outcome}">{row.outcome}</span></td>'
            f'<td class="n">{row.seconds * 1000:.1f} ms</td><td>{_e(row.title)}'
            f"{' <span class=muted>(' + _e(note) + ')</span>' if note else ''}</td></tr>"
        )
    return (
        f'<section><h2 id="cases">All cases ({len(rows)})</h2><details><summary>Show every case</summary>'
        '<table><thead><tr><th>Case</th><th>Level</th><th>Outcome</th><th class="n">Time</th>'
        f"<th>Description</th></tr></thead><tbody>{''.join(body)}</tbody></table></details></section>"
    )


def report_page(report: Report) -> str:
    rows = report.rows
    body = _info_block(report) + _areas_table(rows) + _problems(rows) + _coverage(rows) + _all_cases(rows)
    return page(report.title, _CSS, f"<main>\n{body}\n</main>")


def write_html(path: PathLike, report: Report) -> None:
    write_text(path, report_page(report))


# --------------------------------------------------------------------------- the matrix

_SYMBOL = {PASSED: "✓", FAILED: "✗", UNSUPPORTED: "–", ERRORED: "!"}

_MATRIX_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.5em}
table{border-collapse:collapse}td,th{border:1px solid #ddd;padding:2px 5px;vertical-align:top}
th.impl{writing-mode:vertical-rl;transform:rotate(180deg);white-space:nowrap;font-weight:normal;max-height:16em}
td.c{text-align:center;min-width:1.4em}
.passed{background:#e6f4ea}.failed{background:#fce8e6}.unsupported{background:#f1f3f4;color:#777}
.errored{background:#f3e8fd}
details.d summary{cursor:pointer;list-style:none}
details.d pre{position:absolute;z-index:2;background:#fff;border:1px solid #999;padding:6px;max-width:60em;
white-space:pre-wrap;text-align:left;font-size:12px}
.controls{position:sticky;top:0;background:#fff;padding:6px 0;border-bottom:1px solid #ccc;z-index:3}
tr.hidden{display:none}
"""

_MATRIX_JS = """
function applyFilters(){
  const onlyDisagree=document.getElementById('disagree').checked;
  const caught=document.getElementById('caught').value;
  let shown=0;
  document.querySelectorAll('tr.case').forEach(function(row){
    let keep=true;
    if(onlyDisagree&&row.dataset.disagree!=='1')keep=false;
    if(caught&&(' '+row.dataset.caught+' ').indexOf(' '+caught+' ')<0)keep=false;
    row.classList.toggle('hidden',!keep);if(keep)shown++;
  });
  document.getElementById('shown').textContent=shown;
}
document.addEventListener('DOMContentLoaded',function(){
  // A link can open the page filtered: matrix.html#disagree, or #caught=<column number>.
  const hash=location.hash.slice(1);
  if(hash==='disagree')document.getElementById('disagree').checked=true;
  if(hash.indexOf('caught=')===0)document.getElementById('caught').value=hash.slice(7);
  document.getElementById('disagree').addEventListener('change',applyFilters);
  document.getElementById('caught').addEventListener('change',applyFilters);
  applyFilters();
});
"""


def matrix_page(doc: dict[str, Any]) -> str:
    """``intentref-matrix/1`` as a page: the summary per implementation, then every case × implementation."""
    e = _e
    impls = doc["implementations"]
    names = [i["name"] for i in impls]
    index = {n: k for k, n in enumerate(names)}
    caught_by: dict[str, list[str]] = {}
    for impl_name, ids in doc["caughtBy"].items():
        for case_id in ids:
            caught_by.setdefault(case_id, []).append(str(index[impl_name]))
    disagree = set(doc["disagreements"])
    out = ["<h1>intent-runtime implementations, side by side</h1>",
           f"<p>{len(doc['cases'])} cases, {len(impls)} implementations, {doc['wallSeconds']} s on "
           f"{e(str(doc['machine']['cpus']))} CPUs ({e(doc['machine']['platform'])}), {e(doc['generatedAt'])}.</p>",
           "<h2>Summary</h2><table><tr><th>implementation</th><th>kind</th><th>normative</th><th>pass rate</th>"
           "<th>reference agreement</th><th>seed order flow (median)</th><th>unsupported reasons</th>"
           "<th>badge</th></tr>"]  # fmt: skip
    for impl in impls:
        s = impl["summary"]
        n = s["normative"]
        rate = "–" if s["normativePassRate"] is None else f"{100 * s['normativePassRate']:.1f}%"
        agree = "–" if s["referenceAgreement"] is None else f"{100 * s['referenceAgreement']:.1f}%"
        flow = "–" if s["seedFlowMedianMs"] is None else f"{s['seedFlowMedianMs']:.2f} ms"
        listed = "".join(f"<li>{count} × {e(reason)}</li>" for reason, count in s["unsupportedReasons"].items())
        total = sum(s["unsupportedReasons"].values())
        # A long list folds away: the summary row stays one screen line per implementation.
        reasons = (f"<details><summary>{total} unsupported, {len(s['unsupportedReasons'])} reasons</summary>"
                   f"<ul>{listed}</ul></details>" if len(s["unsupportedReasons"]) > 2 else f"<ul>{listed}</ul>")  # fmt: skip
        problem = f"<br><b>{e(s['error'])}</b>" if s["error"] else ""
        out.append(f"<tr><td>{e(impl['name'])}<br><small>{e(impl['spec'])}</small>{problem}</td><td>{e(impl['kind'])}</td>"
                   f"<td>{n['passed']}/{n['total'] - n['unsupported']} ({n['failed']} failed, {n['errored']} errored)</td>"
                   f"<td>{rate}</td><td>{agree}</td><td>{flow}</td><td>{reasons}</td>"
                   f"<td>{badge_for(s)}</td></tr>")  # fmt: skip
    out.append("</table>")
    options = "".join(f"<option value='{index[n]}'>{e(n)}</option>" for n in doc["caughtBy"])
    out.append("<div class=controls><label><input type=checkbox id=disagree> only cases where implementations "
               "disagree</label> · <label>cases that caught <select id=caught><option value=''>(any)</option>"
               f"{options}</select></label> · <span id=shown></span> cases shown</div>")  # fmt: skip
    header = "".join(f"<th class=impl title='{e(n)}'>{e(n)}</th>" for n in names)
    for level in ("normative", "reference"):
        rows = [c for c in doc["cases"] if c["level"] == level]
        out.append(f"<h2>{level.capitalize()} cases ({len(rows)})</h2><table><tr><th>case</th><th>area</th>{header}</tr>")
        for case in rows:
            cells = []
            for name in names:
                r = case["results"][name]
                text = "\n".join([*r["mismatches"], r["detail"]]).strip()
                symbol = _SYMBOL[r["outcome"]]
                cell = f"<details class=d><summary>{symbol}</summary><pre>{e(text)}</pre></details>" if text else symbol
                cells.append(f"<td class='c {r['outcome']}' title='{e(name)}: {r['outcome']}'>{cell}</td>")
            cites = f" ({e(', '.join(case['decisions']))})" if case["decisions"] else ""
            out.append(f"<tr class=case data-disagree='{int(case['id'] in disagree)}' "
                       f"data-caught='{' '.join(caught_by.get(case['id'], []))}'>"
                       f"<td title='{e(case['description'])}'>{e(case['id'])}{cites}</td><td>{e(case['area'])}</td>"
                       f"{''.join(cells)}</tr>")  # fmt: skip
        out.append("</table>")
    return page("intent-runtime implementations", _MATRIX_CSS, "".join(out), _MATRIX_JS)
