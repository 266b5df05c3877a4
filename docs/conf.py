# Sphinx configuration of the kvmsim documentation (MyST Markdown, furo).
# Build: make docs  (sphinx-build -W: a warning fails the build)
import filecmp
import glob
import os
import sys

from sphinx.errors import ConfigError

project = "kvmsim"
author = "the kvmsim developers"
extensions = ["myst_parser", "sphinx.ext.autodoc", "sphinx.ext.napoleon"]
source_suffix = {".md": "markdown"}
master_doc = "index"
exclude_patterns = ["_build", "**/*.csv"]
html_theme = "furo"
html_title = "kvmsim"
myst_heading_anchors = 3
# Links to source files of the repository are plain text, not documents.
suppress_warnings = ["myst.xref_missing"]

# The Python API page (reference/python.md) documents the built package
# build/python/kvmsim (KVMSIM_BUILD_DIR overrides build/), which needs the
# compiled extension _kvmsim: without it the page would be empty, so stop here.
_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_build = os.path.join(_root, os.environ.get("KVMSIM_BUILD_DIR") or "build")
_pkg = os.path.join(_build, "python", "kvmsim")
if not glob.glob(os.path.join(_pkg, "_kvmsim*.so")):
    raise ConfigError(f"docs: the Python extension is not built ({_pkg}/_kvmsim*.so is missing); "
             "the API page needs it: run `make build` (or "
             "`cmake --build build --target _kvmsim`) first")
_stale = [os.path.basename(p) for p in glob.glob(os.path.join(_root, "bindings", "kvmsim", "*.py"))
          if not os.path.exists(os.path.join(_pkg, os.path.basename(p)))
          or not filecmp.cmp(p, os.path.join(_pkg, os.path.basename(p)), shallow=False)]
if _stale:
    raise ConfigError(f"docs: {_pkg} differs from bindings/kvmsim ({', '.join(sorted(_stale))}); "
             "copy them with `cmake --build build --target kvmsim_python` (or `make build`)")
sys.path.insert(0, os.path.dirname(_pkg))
try:
    import kvmsim  # noqa: F401  (fails here, with the reason, rather than on an empty page)
except ImportError as e:
    raise ConfigError(f"docs: cannot import the kvmsim package from {_pkg}: {e}")

autodoc_member_order = "bysource"
autodoc_typehints = "none"
napoleon_google_docstring = True
napoleon_numpy_docstring = False
