"""paper_repro.md is generated (spmvlab.repro) and current; every paper value's rule finds its
rows; python -m spmvlab.figures lists and plots without measuring."""
import json
import os
import re

import pytest

from reference._common import OptionError
from spmvlab import experiment as X
from spmvlab import figures, repro

PV = X.load_experiment("paper_values")


def test_paper_repro_is_current():
    with open(repro.OUTPUT) as f:
        committed = f.read()
    assert committed == repro.generate(), (
        "paper_repro.md is stale: run `python -m spmvlab.figures --repro` and commit it")


@pytest.mark.parametrize("path, regenerate", [(repro.README, repro.readme_text),
                                                (repro.EXPERIMENTS_DOC, repro.experiments_doc_text)],
                         ids=["README", "docs/experiments.md"])
def test_generated_tables_are_current(path, regenerate):
    with open(path) as f:
        committed = f.read()
    assert committed == regenerate(committed), (
        f"{os.path.relpath(path, X.ROOT)}'s generated table is stale: run "
        "`python -m spmvlab.figures --repro` and commit it")


def _rules():
    out = [(f"VALUES[{k!r}]", rule) for k, rule in PV.VALUES.items()]
    for section, rows in PV.SECTIONS.items():
        out += [(f"{section}[{i}] {row['label']}: {row['what']}", row["ours"])
                for i, row in enumerate(rows) if isinstance(row["ours"], dict)]
    return out


@pytest.mark.parametrize("where,rule", _rules(), ids=[w for w, _ in _rules()])
def test_every_paper_value_finds_its_rows(where, rule):
    devices = repro.devices(rule)
    assert devices, f"{where}: no device has results {rule['results']}"
    for dev in devices:
        got = repro.extract(rule, dev, where)
        assert got.n_rows >= 1 and got.text and "nan" not in got.text.lower(), (where, dev, got)


def test_every_row_is_complete_and_every_placeholder_known():
    for section, rows in PV.SECTIONS.items():
        for row in rows:
            for key in ("label", "what", "script", "ours", "why"):
                assert row.get(key), (section, row.get("what"), key)
            assert row.get("paper") is None or isinstance(row["paper"], (int, float, str))
    with open(repro.TEMPLATE) as f:
        template = f.read()
    used = set(re.findall(r"\{\{(table|value):([\w-]+)\}\}", template))
    assert used == {("table", s) for s in PV.SECTIONS} | {("value", v) for v in PV.VALUES}
    assert "{{" not in repro.generate()


def test_numbers_of_the_old_text_come_out_of_the_results():
    text = repro.generate()
    for quoted in ("cuBLAS GEMV time, 4096×11008 fp16 (**main job**) | `experiments/fig7_macko.py` "
                   "| 122 µs | 36.8 µs (h100); 28.9 µs (h200) | 0.30 (h100); 0.24 (h200) |",
                   "0.99× at 30 %, 1.29× at 50 %, 1.83× at 70 %, 2.52× at 90 % (h100)",
                   "| 1.30× | 1.32× (h100); 1.20× (h200) | 1.02 (h100); 0.93 (h200) |",
                   "29 of 31 (h100); 27 of 31 (h200)",
                   "5120×5120 (0.93×), 5120×13824 (0.95×) (h100)", "3.01 TB/s (h100)",
                   "1-bit < 24 %, 2-bit 24–56 %, 4-bit 56–89 %, 8-bit > 89 % (cpu)",
                   "| 0.78 (stated in its text, Sec. 4.2) | 0.80 (cpu) | 1.03 |", "1.29–1.36× (h100); 1.20–1.23× (h200) | 0.81–0.85 (h100); 0.75–0.77 (h200)",
                   "csr_vector 78.3 µs, cusparse 72.2 µs (h100)", "8.10 GB (h100)"):
        assert quoted in text, quoted


def _fake_results(tmp_path, monkeypatch):
    monkeypatch.setattr(X.R, "RESULTS", str(tmp_path))
    rows = [dict(method=m, sparsity=s, shape=[8, 16], median_us=t, speedup_vs_cublas=10.0 / t)
            for m, s, t in [("cublas", 0.5, 10.0), ("macko", 0.5, 8.0), ("macko", 0.9, 4.0)]]
    for dev in ("h100", "h200"):
        X.save_results("demo", rows, {}, extra={"copy_bandwidth": {"tb_s": 2.0}},
                       meta={"device": {"simulator": False, "name": f"NVIDIA {dev.upper()}"}})


def test_extraction_rules(tmp_path, monkeypatch):
    _fake_results(tmp_path, monkeypatch)
    rule = dict(results="demo", where={"method": "macko", "sparsity": 0.5},
                field="speedup_vs_cublas", fmt=".2f", unit="×")
    assert repro.devices(rule) == ["h100", "h200"]
    got = repro.ours(rule)
    assert got["h100"].text == "1.25×" and got["h100"].numbers == [1.25]
    assert repro.ratio(1.0, got, rule) == "1.25 (h100); 1.25 (h200)"
    assert repro.ratio("text", got, rule) == "—"
    macko = dict(rule, where={"method": "macko"})
    assert repro.extract(dict(macko, agg="range"), "h100").text == "1.25–2.50×"
    assert repro.extract(dict(macko, agg="max", invert=True), "h100").text == "0.80×"
    assert repro.extract(dict(macko, agg="list", item="{v} at {pct} % on {shape_x}"),
                         "h100").text == "1.25× at 50 % on 8×16, 2.50× at 90 % on 8×16"
    assert repro.extract(dict(rule, where={"sparsity": (">", 0.1)}, agg="fraction",
                              having={"median_us": ("<", 9)}), "h100").text == "2 of 3"
    copy = dict(results="demo", table="copy_bandwidth", field="tb_s")
    share = dict(results="demo", where={"method": "cublas"}, field="median_us", scale=100,
                 divide_by=copy, fmt=".0f", unit=" %")
    assert repro.extract(share, "h200").text == "500 %"
    with pytest.raises(OptionError, match="exactly one row.*2 rows"):
        repro.extract(dict(rule, where={"method": "macko"}), "h100", "my row")
    with pytest.raises(OptionError, match="at least one row"):
        repro.extract(dict(rule, where={"method": "nothing"}, agg="median"), "h100")
    with pytest.raises(OptionError, match="agg"):
        repro.extract(dict(rule, agg="mode"), "h100")
    assert repro.ours(dict(rule, results="absent")) == {}
    assert "no results yet" in repro.table([dict(label="L", what="w", script="s", paper=1,
                                                 ours=dict(rule, results="absent"), why="y")])
    # a why quoting measured numbers fills them from its rules, per device when several have them
    row = dict(label="L", what="w", script="s", paper=None, ours="text",
               why="MACKO {fast} on {n} shapes", why_rules=dict(
                   fast=dict(macko, agg="range"), n=dict(macko, agg="count", devices=["h200"])))
    assert repro.why(row) == "MACKO 1.25–2.50× (h100); 1.25–2.50× (h200) on 2 shapes"
    assert "| MACKO 1.25–2.50× (h100); 1.25–2.50× (h200) on 2 shapes |" in repro.table([row])


def test_figures_list(capsys):
    assert figures.main(["--list"]) == 0
    out = capsys.readouterr().out.splitlines()
    names = [line.split()[0] for line in out]
    assert names == sorted(X.experiments()) and "paper_values" not in names
    by = {line.split()[0]: line for line in out}
    assert " GPU  results: h100,h200 " in by["fig7_macko"] and " CPU  results: cpu " in by["fig2_macko"]


def test_figures_plot_without_measuring(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(X.R, "FIGURES", str(tmp_path))
    mods = X.experiments()
    for mod in mods.values():
        monkeypatch.setattr(mod, "measure", lambda cfg: pytest.fail("figures measured without --measure"))
    assert figures.main(["fig7_macko", "appc_macko"]) == 0
    made = sorted(os.path.relpath(os.path.join(d, f), tmp_path)
                  for d, _, fs in os.walk(tmp_path) for f in fs)
    assert made == ["cpu/appc_macko.pdf", "cpu/appc_macko.png", "h100/fig7_macko.pdf",
                    "h100/fig7_macko.png", "h100/fig7_macko_12288x12288.pdf",
                    "h100/fig7_macko_12288x12288.png", "h200/fig7_macko.pdf", "h200/fig7_macko.png",
                    "h200/fig7_macko_11008x4096.pdf", "h200/fig7_macko_11008x4096.png",
                    "h200/fig7_macko_12288x12288.pdf", "h200/fig7_macko_12288x12288.png",
                    "h200/fig7_macko_4096x4096.pdf", "h200/fig7_macko_4096x4096.png"]
    assert figures.main(["fig7_macko", "--device", "a100"]) == 1
    assert "fig7_macko: no saved results" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        figures.main(["no_such_experiment"])


def test_figures_repro_writes_the_generated_file(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(repro, "OUTPUT", str(tmp_path / "paper_repro.md"))
    copies = {}
    for name, path in (("README", repro.README), ("docs", repro.EXPERIMENTS_DOC)):
        copies[name] = tmp_path / os.path.basename(path)
        stale = open(path).read().replace("| MACKO |", "| stale |").replace("| `experiments/", "| `old/")
        copies[name].write_text(stale)
    monkeypatch.setattr(repro.write, "__defaults__", (str(tmp_path / "paper_repro.md"),
                                                      str(copies["README"]), str(copies["docs"])))
    assert figures.main(["--repro"]) == 0
    assert (tmp_path / "paper_repro.md").read_text() == repro.generate()
    assert copies["README"].read_text() == open(repro.README).read()          # tables refreshed
    assert copies["docs"].read_text() == open(repro.EXPERIMENTS_DOC).read()
    assert json.dumps(capsys.readouterr().out).count("wrote") == 1


_SECTION_REF = re.compile(r'(docs/[a-z_]+\.md)`{0,2}[\s#]*[,(][\s#(]*"([^"]{3,160})"')


def _section_refs(root: str):
    """(file, doc, section) for every 'docs/NAME.md, "Section"' a source file names."""
    for top in ("spmvlab", "reference", "experiments", "tools", "tests"):
        for dirpath, _, names in os.walk(os.path.join(root, top)):
            for name in sorted(n for n in names if n.endswith(".py") and n != "test_repro.py"):
                path = os.path.join(dirpath, name)
                text = open(path, encoding="utf-8").read()
                for m in _SECTION_REF.finditer(text):
                    section = " ".join(m.group(2).replace("#", " ").split())
                    yield os.path.relpath(path, root), m.group(1), section


def test_code_names_only_doc_sections_that_exist():
    """Docstrings and comments send readers to 'docs/performance.md, "Section"': each such
    section must be a heading of that file (a heading that begins with the quoted words)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    refs = list(_section_refs(root))
    assert len(refs) >= 8, refs                  # the pattern still finds the references
    missing = []
    for where, doc, section in refs:
        with open(os.path.join(root, doc), encoding="utf-8") as f:
            heads = [" ".join(line.lstrip("#").split()) for line in f if line.startswith("#")]
        if not any(h.startswith(section) for h in heads):
            missing.append(f"{where}: {doc}, {section!r}")
    assert not missing, "sections named in the code but not in the docs:\n" + "\n".join(missing)
