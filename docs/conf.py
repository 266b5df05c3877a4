# Sphinx configuration of the kvmsim documentation (MyST Markdown, furo).
# Build: make docs  (sphinx-build -W: a warning fails the build)
project = "kvmsim"
author = "the kvmsim developers"
extensions = ["myst_parser"]
source_suffix = {".md": "markdown"}
master_doc = "index"
exclude_patterns = ["_build", "**/*.csv"]
html_theme = "furo"
html_title = "kvmsim"
myst_heading_anchors = 3
# Links to source files of the repository are plain text, not documents.
suppress_warnings = ["myst.xref_missing"]
