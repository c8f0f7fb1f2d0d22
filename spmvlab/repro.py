"""paper_repro.md, generated: the papers' values beside ours, read out of the results of every
device by rules, inside static prose.

Inputs: ``experiments/paper_values.py`` (``SECTIONS``: section -> table rows; ``VALUES``: name
-> extraction rule for numbers quoted in the prose), ``experiments/paper_repro_template.md``
(the prose, with ``{{table:<section>}}`` and ``{{value:<name>}}`` placeholders) and
``results/<device>/*.json``. Output: ``paper_repro.md`` (:func:`write`, or ``python -m
spmvlab.figures --repro``, which also regenerates the README's summary table,
:func:`readme_table`); tests check both committed files are current.

A table row is a dict: ``label`` (figure/table), ``what``, ``script`` (a path or a list of
them) with an optional ``script_note``, ``paper`` (a number in the rule's unit, a text, or
None) with optional ``paper_note`` and ``paper_fmt`` (default ``g``), ``ours`` (an extraction
rule, or a text for rows not read from results) and ``why``. A ``why`` that quotes measured
numbers names them as ``{name}`` placeholders and gives ``why_rules`` (name -> extraction
rule): each is filled with the rule's text per device, like "ours", so the prose follows the
results instead of going stale.

An extraction rule is a dict:

``results``    a results name, or a list of names whose rows are pooled
``view``       optional ``"module:function"``: the rows are ``function(results)`` of
               experiments/<module>.py instead of ``results["rows"]``
``table``      optional: read this top-level key of the results (a dict is one row)
``where``      ``{field: value}`` or ``{field: (op, value)}``, op one of ``== != < <= > >= in``
``field``      the key read from each row kept
``agg``        ``value`` (exactly one row), ``median``, ``min``, ``max``, ``mean``,
               ``range`` (min-max), ``list`` (every row, in order), ``count``, or ``fraction``
               (rows meeting ``having`` out of the rows kept)
``item``       with ``list``: ``str.format`` of each row, ``{v}`` the formatted value, ``{pct}``
               100 x sparsity, ``{shape_x}`` the shape as RxC; ``sep`` joins them (", ")
``invert``     use 1/x; ``scale``: multiply by it (100 for %)
``divide_by``  another rule giving one number on the same device: divide by it
``fmt``        number format (``.2f``), ``unit`` appended as is (``"×"``, ``" µs"``)
``devices``    optional: read only these devices' results (a value measured from some device on)

"Ours" lists the value of every device whose results hold the rule's files, e.g.
``1.29× (h100); 1.35× (h200)``; the ratio ours/paper is given where both are numbers.
"""
from __future__ import annotations

import dataclasses
import json
import operator
import os
import re
import statistics

from reference._common import OptionError, problem

from . import experiment as X

__all__ = ["Got", "devices", "extract", "ours", "ratio", "why", "table", "generate", "write",
           "readme_table", "readme_text", "experiments_table", "experiments_doc_text",
           "TEMPLATE", "OUTPUT", "README", "EXPERIMENTS_DOC"]

TEMPLATE = os.path.join(X.EXPERIMENTS, "paper_repro_template.md")
OUTPUT = os.path.join(X.ROOT, "paper_repro.md")
_OPS = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le,
        ">": operator.gt, ">=": operator.ge, "in": lambda a, b: a in b}
_AGGS = ("value", "median", "min", "max", "mean", "range", "list", "count", "fraction")


@dataclasses.dataclass
class Got:
    """What a rule read on one device: the numbers (for ratios; empty for counts and lists),
    the text shown, and how many rows it kept."""

    numbers: list
    text: str
    n_rows: int


def _names(rule: dict) -> list[str]:
    names = rule["results"] if isinstance(rule["results"], list) else [rule["results"]]
    return names + (_names(rule["divide_by"]) if "divide_by" in rule else [])


def devices(rule: dict) -> list[str]:
    """The devices whose results folder holds every file ``rule`` reads (only those of the
    rule's optional ``devices`` list, for values measured from some device on)."""
    found = [set(X.result_devices(n)) for n in _names(rule)]
    have = set.intersection(*found) if found else set()
    if "devices" in rule:
        have &= set(rule["devices"])
    return sorted(have)


def _load(name: str, device: str) -> dict:
    with open(X.results_path(name, device)) as f:
        return json.load(f)


def _rows(rule: dict, device: str) -> list[dict]:
    names = rule["results"] if isinstance(rule["results"], list) else [rule["results"]]
    rows = []
    for name in names:
        res = _load(name, device)
        if "view" in rule:
            module, func = rule["view"].split(":")
            rows += getattr(X.load_experiment(module), func)(res)
        elif "table" in rule:
            got = res[rule["table"]]
            rows += [got] if isinstance(got, dict) else list(got)
        else:
            rows += res["rows"]
    return rows


def _keep(row: dict, where: dict) -> bool:
    for key, want in where.items():
        have = row.get(key)
        if isinstance(want, tuple):
            op, value = want
            if have is None or not _OPS[op](have, value):
                return False
        elif have != want:
            return False
    return True


def _fmt(v, rule: dict) -> str:
    if isinstance(v, str):
        return v
    return format(v, rule.get("fmt", ".2f")) + rule.get("unit", "")


def _span(lo: float, hi: float, rule: dict) -> str:
    a, b = format(lo, rule.get("fmt", ".2f")), format(hi, rule.get("fmt", ".2f"))
    return (a if a == b else f"{a}–{b}") + rule.get("unit", "")


def _context(row: dict, text: str) -> dict:
    ctx = dict(row, v=text)
    if isinstance(row.get("sparsity"), (int, float)):
        ctx["pct"] = format(100 * row["sparsity"], ".0f")
    if isinstance(row.get("shape"), list):
        ctx["shape_x"] = "×".join(str(s) for s in row["shape"])
    return ctx


def extract(rule: dict, device: str, where_from: str = "rule") -> Got:
    """Apply ``rule`` to ``device``'s results (see the module docstring)."""
    agg = rule.get("agg", "value")
    if agg not in _AGGS:
        raise OptionError(problem(f"{where_from}: agg", f"one of {_AGGS}", repr(agg)))
    rows = [r for r in _rows(rule, device) if _keep(r, rule.get("where", {}))]
    if not rows or (agg == "value" and len(rows) != 1):
        raise OptionError(problem(f"{where_from}: where", "exactly one row" if agg == "value"
                                  else "at least one row", f"{len(rows)} rows of {_names(rule)} on "
                                  f"{device}", "fix the filter or the results names"))
    if agg == "count":
        return Got([], str(len(rows)), len(rows))
    if agg == "fraction":
        n = sum(_keep(r, rule["having"]) for r in rows)
        return Got([], f"{n} of {len(rows)}", len(rows))
    vals = [r.get(rule["field"]) for r in rows]
    if any(v is None for v in vals):
        raise OptionError(problem(f"{where_from}: field", f"{rule['field']!r} in every row kept",
                                  "rows without it", "filter them out with where"))
    if not all(isinstance(v, str) for v in vals):
        if rule.get("invert"):
            vals = [1.0 / v for v in vals]
        vals = [v * rule.get("scale", 1) for v in vals]
        if "divide_by" in rule:
            base = extract(rule["divide_by"], device, f"{where_from}: divide_by").numbers[0]
            vals = [v / base for v in vals]
    if agg == "list":
        item, sep = rule.get("item", "{v}"), rule.get("sep", ", ")
        text = sep.join(item.format(**_context(r, _fmt(v, rule))) for r, v in zip(rows, vals))
        return Got([], text, len(rows))
    if agg == "range":
        lo, hi = min(vals), max(vals)
        return Got([lo, hi], _span(lo, hi, rule), len(rows))
    one = {"value": lambda v: v[0], "median": statistics.median, "min": min, "max": max,
           "mean": statistics.fmean}[agg](vals)
    return Got([one], _fmt(one, rule), len(rows))


def ours(rule, where_from: str = "rule") -> dict[str, Got]:
    """``{device: Got}`` for every device with the rule's results."""
    return {d: extract(rule, d, where_from) for d in devices(rule)}


def _by_device(parts: dict[str, str]) -> str:
    return "; ".join(f"{text} ({dev})" for dev, text in parts.items()) if parts else "no results yet"


def ratio(paper, got: dict[str, Got], rule: dict) -> str:
    """ours / paper per device ("—" unless both are numbers)."""
    if not isinstance(paper, (int, float)) or not paper:
        return "—"
    parts = {}
    for dev, g in got.items():
        if len(g.numbers) == 2:
            parts[dev] = _span(g.numbers[0] / paper, g.numbers[1] / paper, {"fmt": ".2f"})
        elif len(g.numbers) == 1:
            parts[dev] = format(g.numbers[0] / paper, ".2f")
    if not parts:
        return "—"
    return next(iter(parts.values())) if len(parts) == 1 else _by_device(parts)


def _cell(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _paper(row: dict) -> str:
    p = row.get("paper")
    if p is None:
        text = "—"
    elif isinstance(p, (int, float)):
        text = format(p, row.get("paper_fmt", "g")) + (row["ours"].get("unit", "")
                                                       if isinstance(row["ours"], dict) else "")
    else:
        text = p
    return f"{text} ({row['paper_note']})" if row.get("paper_note") else text


def why(row: dict, where_from: str = "row") -> str:
    """The row's ``why``, its ``{name}`` placeholders filled from ``why_rules``."""
    text = row.get("why") or "—"
    rules = row.get("why_rules")
    if not rules:
        return text
    filled = {}
    for name, rule in rules.items():
        got = ours(rule, f"{where_from}: why_rules[{name!r}]")
        filled[name] = (next(iter(got.values())).text if len(got) == 1
                        else _by_device({d: g.text for d, g in got.items()}))
    return text.format(**filled)


def table(rows: list[dict], section: str = "") -> str:
    """The markdown table of one section's rows."""
    out = ["| figure/table | what | script | paper | ours (device) | ours / paper | why they differ |",
           "| --- | --- | --- | --- | --- | --- | --- |"]
    for i, row in enumerate(rows):
        rule = row["ours"]
        where_from = f"paper_values.SECTIONS[{section!r}][{i}] ({row['label']}, {row['what']})"
        if isinstance(rule, dict):
            got = ours(rule, where_from)
            mine, rat = _by_device({d: g.text for d, g in got.items()}), ratio(row.get("paper"), got, rule)
        else:
            mine, rat = rule, "—"
        scripts = row.get("script") or []
        scripts = [scripts] if isinstance(scripts, str) else scripts
        script = ", ".join(f"`{x}`" for x in scripts) or "—"
        if row.get("script_note"):
            script += f" ({row['script_note']})"
        out.append("| " + " | ".join(_cell(c) for c in (row["label"], row["what"], script,
                                                         _paper(row), mine, rat,
                                                         why(row, where_from))) + " |")
    return "\n".join(out)


def generate(template: str = TEMPLATE) -> str:
    """paper_repro.md's text from the template, paper_values and the saved results."""
    pv = X.load_experiment("paper_values")
    with open(template) as f:
        text = f.read()

    def fill(m):
        kind, key = m.group(1), m.group(2)
        source = pv.SECTIONS if kind == "table" else pv.VALUES
        if key not in source:
            raise OptionError(problem(f"{{{{{kind}:{key}}}}} in {os.path.basename(template)}",
                                      f"one of {sorted(source)}", repr(key),
                                      "add it to experiments/paper_values.py"))
        if kind == "table":
            return table(source[key], key)
        return _by_device({d: g.text for d, g in ours(source[key], f"VALUES[{key!r}]").items()})

    return re.sub(r"\{\{(table|value):([\w-]+)\}\}", fill, text)


README = os.path.join(X.ROOT, "README.md")
#: the README's generated block lies between these lines
README_BEGIN, README_END = "<!-- summary table: generated, do not edit -->", "<!-- end of summary table -->"


def readme_table() -> str:
    """The README's table of formats (``paper_values.README_SUMMARY``): bytes per weight and
    speed against cuBLAS, each cell per device from the results, as the sections are."""
    pv = X.load_experiment("paper_values")
    out = ["| format | paper | bytes per weight | SpMV vs cuBLAS | SpMM, N = 8, vs cuBLAS |",
           "| --- | --- | --- | --- | --- |"]
    for i, row in enumerate(pv.README_SUMMARY):
        cells = []
        for key in ("bytes", "spmv", "spmm"):
            rule = row[key]
            if isinstance(rule, dict):
                got = ours(rule, f"README_SUMMARY[{i}] ({row['format']}, {key})")
                text = _by_device({d: g.text for d, g in got.items()})
                cells.append(text + (f" ({rule['note']})" if rule.get("note") else ""))
            else:
                cells.append(rule)
        out.append("| " + " | ".join(_cell(c) for c in (row["format"], row["paper"], *cells)) + " |")
    return "\n".join(out)


def readme_text(text: str) -> str:
    """``text`` (the README) with its generated block replaced by :func:`readme_table`."""
    return _replace_block(text, README_BEGIN, README_END, readme_table(), "README.md")


EXPERIMENTS_DOC = os.path.join(X.ROOT, "docs", "experiments.md")
DOC_BEGIN, DOC_END = "<!-- experiments table: generated, do not edit -->", "<!-- end of experiments table -->"


def _first_sentence(doc: str | None) -> str:
    para = " ".join((doc or "").strip().split("\n\n")[0].split())
    first = re.split(r"(?<=[a-z0-9)])\.\s+(?=[A-Z])", para)[0].rstrip(".")
    first = re.split(r" \(|: (?=[a-z])", first)[0] if len(first) > 110 else first
    return first if len(first) <= 110 else first[:109].rstrip() + "…"


def experiments_table() -> str:
    """docs/experiments.md's table: one row per experiment with what it reproduces, where it
    measures, the saved results per device (date, and how long the measurement took where the
    run recorded it)."""
    out = ["| script | what | measures on | saved results (device: date, measuring time) |",
           "| --- | --- | --- | --- |"]
    for name, mod in X.experiments().items():
        saved = []
        for run in getattr(mod, "RUNS", [{}]):
            res_name = X.results_name(mod, mod.config(**run))
            for dev in X.result_devices(res_name):
                res = X.load_results(res_name, dev)
                took = res.get("measure_s")
                date = ((res.get("meta") or {}).get("date_utc") or "?")[:10]
                saved.append(f"{dev}: {date}" + (f", {took:.0f} s" if took else "")
                             + (f" ({res_name})" if res_name != name else ""))
        where = "CPU" if not mod.NEEDS_GPU else (
            f"any (from {mod.DERIVED_FROM}'s rows)" if hasattr(mod, "derive") else "GPU")
        out.append("| " + " | ".join(_cell(c) for c in (
            f"`experiments/{name}.py`", _first_sentence(mod.__doc__), where,
            "; ".join(saved) or "none yet")) + " |")
    return "\n".join(out)


def _replace_block(text: str, begin: str, end: str, block: str, where: str) -> str:
    a, b = text.find(begin), text.find(end)
    if a < 0 or b < a:
        raise OptionError(problem(where, f"the lines {begin!r} and {end!r} around the "
                                  "generated table", "neither or one of them",
                                  "put them back around the table"))
    return text[:a + len(begin)] + "\n" + block + "\n" + text[b:]


def experiments_doc_text(text: str) -> str:
    """docs/experiments.md's ``text`` with its generated table replaced."""
    return _replace_block(text, DOC_BEGIN, DOC_END, experiments_table(), "docs/experiments.md")


def _update(path: str, edit) -> None:
    with open(path) as f:
        old = f.read()
    new = edit(old)
    if new != old:
        with open(path, "w") as f:
            f.write(new)


def write(path: str = OUTPUT, readme: str = README, experiments_doc: str = EXPERIMENTS_DOC) -> str:
    """Regenerate paper_repro.md, the README's summary table and docs/experiments.md's table;
    returns paper_repro's path."""
    text = generate()
    with open(path, "w") as f:
        f.write(text)
    _update(readme, readme_text)
    _update(experiments_doc, experiments_doc_text)
    return path
