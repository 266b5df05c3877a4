"""Every command the documentation marks runnable runs.

A fenced ```sh block right after a line `% runnable` (a MyST comment, not
rendered) in docs/**/*.md is run with bash from the repository root, with
build/kvmsim and the Python package of build/python; it must exit 0. A
```text block right after a line `% output` must equal what the runnable
block before it printed.
"""
import os
import pathlib
import re
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BLOCK = re.compile(r"^% (runnable|output)\n```(sh|text)\n(.*?)^```", re.S | re.M)


def runnable_blocks():
    blocks = []
    for md in sorted((ROOT / "docs").rglob("*.md")):
        if "_build" in md.parts:
            continue
        text = md.read_text()
        last = None
        for m in BLOCK.finditer(text):
            kind, lang, body = m.group(1), m.group(2), m.group(3)
            line = text.count("\n", 0, m.start()) + 1
            if kind == "runnable":
                assert lang == "sh", f"{md}:{line}: '% runnable' must precede a ```sh block"
                last = [f"{md.relative_to(ROOT)}:{line}", body, None]
                blocks.append(last)
            else:
                assert last is not None, f"{md}:{line}: '% output' without a runnable block before it"
                last[2] = body
    return blocks


BLOCKS = runnable_blocks()


def test_the_docs_have_runnable_blocks():
    # The tutorial and the how-to pages hold most of them.
    assert len(BLOCKS) >= 8


@pytest.mark.parametrize("where,script,expected", BLOCKS, ids=[b[0] for b in BLOCKS])
def test_runnable_block(where, script, expected):
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT / "build" / "python") + (
        os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    r = subprocess.run(["bash", "-e", "-c", script], cwd=ROOT, env=env, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, f"{where} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}"
    if expected is not None:
        assert r.stdout == expected, f"{where}: the output differs from the page's"


def test_a_failing_block_fails(tmp_path):
    # The harness itself: a block that fails must be reported as failing.
    r = subprocess.run(["bash", "-e", "-c", "build/kvmsim run no/such/scenario.yaml\necho after"],
                       cwd=ROOT, capture_output=True, text=True)
    assert r.returncode != 0 and "after" not in r.stdout
