"""The README's Python example runs as written (and its checks can fail: they compare with the
input matrix and the exact product, not with another encoding)."""
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _example() -> str:
    with open(os.path.join(ROOT, "README.md")) as f:
        text = f.read()
    section = text.split("## Ten lines of Python", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_readme_example_runs(capsys):
    exec(compile(_example(), "README.md example", "exec"), {})
    assert "bytes per nonzero" in capsys.readouterr().out


def test_readme_example_checks_can_fail():
    """The same lines with a corrupted kernel result must fail at the check."""
    code = _example().replace("y = gpu.spmv(M, x)", "y = gpu.spmv(M, x); y[3] = y[3] + 1")
    try:
        exec(compile(code, "README.md example (broken)", "exec"), {})
    except AssertionError:
        return
    raise AssertionError("the README example's checks did not catch a wrong result")
