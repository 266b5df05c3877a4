"""Every notebook in notebooks/ runs top to bottom (shortened runs: KVMSIM_NOTEBOOK_QUICK=1)
and draws its plots."""
import glob
import os

import pytest

from conftest import REPO

NOTEBOOKS = sorted(glob.glob(os.path.join(REPO, "notebooks", "*.ipynb")))


def test_there_is_a_notebook_per_validated_experiment():
    names = [os.path.basename(p) for p in NOTEBOOKS]
    for target in ("T1", "T2", "T3", "T4"):
        assert any(n.startswith(target + "_") for n in names), target


@pytest.mark.parametrize("path", NOTEBOOKS, ids=os.path.basename)
def test_notebook_executes_and_plots(path, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    monkeypatch.setenv("KVMSIM_NOTEBOOK_QUICK", "1")
    monkeypatch.setenv("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    nb = nbformat.read(path, as_version=4)
    nbclient.NotebookClient(nb, timeout=120, kernel_name="python3",
                            resources={"metadata": {"path": os.path.dirname(path)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    assert any("image/png" in o.get("data", {}) for o in outputs), "no plot drawn"
