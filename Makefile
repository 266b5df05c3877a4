# kvmsim top-level convenience targets. The build itself is CMake (CMakeLists.txt).
#   make build   install missing Debian packages, configure (Release) and build
#   make demo    build, run the pinned cyclictest scenario, print its histogram
#   make test    build, run ctest, then pytest over tests/python (the Python package is
#                build/python/kvmsim: PYTHONPATH=build/python)
#   make bench   build, run kvmsim-bench
#   make pgo     build-pgo/kvmsim: profile-guided build of the CLI (instrumented build,
#                tools/pgo-train.sh, optimised build), outputs checked identical to build/'s
#   make sanitize  build-asan/ with ASan+UBSan (KVMSIM_SANITIZE), run ctest there (all but the
#                  validate group: whole-table reruns of the scenarios the cli tests already cover)
#   make docs          the documentation site (Sphinx, warnings are errors): docs/_build/html;
#                      needs a build first (the Python API page documents build/python/kvmsim)
#   make gen-docs      regenerate docs/reference/{parameters,cli}.md and docs/validation.md
#   make docs-check    fail if those generated pages differ from what build/kvmsim prints
#   make format        clang-format -i over the C++ sources
#   make format-check  fail if a C++ source is not clang-format clean (CI runs it first)
#   make tidy          clang-tidy over sim/**/*.cpp (uses build/compile_commands.json)
#   make tidy-check    the same, failing on any warning (sim/ is kept tidy-clean; CI runs it)
#   make clean   remove build/

BUILD_DIR  ?= build
BUILD_TYPE ?= Release
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
PYTHON     ?= /usr/bin/python3
CMAKE_ARGS ?=

# Root runs the installer directly; otherwise use sudo when it exists.
SUDO := $(shell if [ "$$(id -u)" != 0 ] && command -v sudo >/dev/null 2>&1; then echo sudo; fi)

FORMAT_DIRS := sim tools bench tests bindings fuzz
FORMAT_EXTS := -name '*.cpp' -o -name '*.cc' -o -name '*.h' -o -name '*.hpp'

.PHONY: all deps configure build demo test bench pgo sanitize docs gen-docs docs-check format format-check tidy tidy-check clean

all: build

# The package check runs again only when the list changes (or after make clean):
# a stamp in the build directory records a successful run of the installer.
DEPS_STAMP := $(BUILD_DIR)/.deps-installed

deps: $(DEPS_STAMP)

$(DEPS_STAMP): tools/install-deps.sh
	$(SUDO) bash tools/install-deps.sh
	@mkdir -p $(BUILD_DIR) && touch $@

configure: deps
	cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_ARGS)

build: configure
	cmake --build $(BUILD_DIR) -j$(JOBS)

demo: build
	./$(BUILD_DIR)/kvmsim run scenarios/cyclictest_pinned.yaml --out $(BUILD_DIR)/demo
	cat $(BUILD_DIR)/demo/histogram.txt

test: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j2
	@if [ -d tests/python ] && [ -n "$$(find tests/python -name 'test_*.py' -o -name '*_test.py' | head -n 1)" ]; then \
	  echo "PYTHONPATH=$(CURDIR)/$(BUILD_DIR)/python $(PYTHON) -m pytest -q tests/python"; \
	  PYTHONPATH="$(CURDIR)/$(BUILD_DIR)/python$${PYTHONPATH:+:$$PYTHONPATH}" $(PYTHON) -m pytest -q tests/python; \
	  rc=$$?; \
	  if [ $$rc -eq 5 ]; then echo "pytest: no tests collected in tests/python"; rc=0; fi; \
	  exit $$rc; \
	fi

bench: build
	./$(BUILD_DIR)/kvmsim-bench

PGO_DIR ?= build-pgo
pgo: build
	cmake -S . -B $(PGO_DIR) -DCMAKE_BUILD_TYPE=Release -DKVMSIM_PYTHON=OFF -DKVMSIM_PGO=generate $(CMAKE_ARGS)
	cmake --build $(PGO_DIR) -j$(JOBS) --target kvmsim
	find $(PGO_DIR) -name '*.gcda' -delete
	bash tools/pgo-train.sh $(PGO_DIR)/kvmsim
	cmake -S . -B $(PGO_DIR) -DKVMSIM_PGO=use
	cmake --build $(PGO_DIR) -j$(JOBS) --target kvmsim kvmsim-bench
	@for s in "scenarios/cyclictest_pinned.yaml --set cyclictest.loops=100000" \
	          "scenarios/cyclictest_pinned.yaml --set cyclictest.loops=100000 --set kvm.enable_hv_timer=false" \
	          "scenarios/vmexit_ipi.yaml --set vmexit.goal_cycles=2000000"; do \
	  rm -rf $(PGO_DIR)/check-plain $(PGO_DIR)/check-pgo; \
	  ./$(BUILD_DIR)/kvmsim run $$s -q --out $(PGO_DIR)/check-plain || exit 1; \
	  ./$(PGO_DIR)/kvmsim run $$s -q --out $(PGO_DIR)/check-pgo || exit 1; \
	  for f in $(PGO_DIR)/check-plain/*; do \
	    grep -v '"sim.wall_s"' $$f > $$f.cmp; grep -v '"sim.wall_s"' $(PGO_DIR)/check-pgo/$$(basename $$f) > $$f.pgo; \
	    cmp -s $$f.cmp $$f.pgo || { echo "pgo: $$s: $$(basename $$f) differs from $(BUILD_DIR)/kvmsim's"; exit 1; }; \
	  done; \
	done; echo "pgo: $(PGO_DIR)/kvmsim built; outputs identical to $(BUILD_DIR)/kvmsim's"

# The model leaks its SystemC objects on purpose (one elaboration per process): no leak checks.
# -O1 -g1 (line tables, enough for the reports' file:line): compiles in ~55% of -O2 -g's time,
# the long pole of CI.
sanitize: deps
	cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKVMSIM_SANITIZE=ON -DKVMSIM_PYTHON=OFF \
	  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" $(CMAKE_ARGS)
	cmake --build build-asan -j$(JOBS)
	cd build-asan && ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 ctest --output-on-failure -j2 -LE validate

docs: deps
	KVMSIM_BUILD_DIR=$(BUILD_DIR) $(PYTHON) -m sphinx -W --keep-going -b html docs docs/_build/html

gen-docs: build
	bash tools/gen-docs.sh $(BUILD_DIR)/kvmsim

docs-check: build
	bash tools/gen-docs.sh --check $(BUILD_DIR)/kvmsim

format:
	find $(wildcard $(FORMAT_DIRS)) -type f \( $(FORMAT_EXTS) \) -print0 | xargs -0 -r clang-format -i

format-check:
	@command -v clang-format >/dev/null || { echo "format-check: clang-format is not installed (apt-get install clang-format)"; exit 1; }
	find $(wildcard $(FORMAT_DIRS)) -type f \( $(FORMAT_EXTS) \) -print0 | xargs -0 -r clang-format --dry-run -Werror

tidy-check: configure
	bash tools/tidy-check.sh $(BUILD_DIR)

tidy: configure
	find sim -type f -name '*.cpp' -print0 | xargs -0 -r clang-tidy -p $(BUILD_DIR) --quiet

clean:
	rm -rf $(BUILD_DIR)
