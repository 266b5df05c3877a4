// Catch2 v2 entry point for the unit tests.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

// libsystemc.so refers to sc_main (its own main() calls it); the tests have
// Catch2's main() and never elaborate, but tests that touch SystemC's time
// (sim/core/invariants_test.cpp) link the library in, which needs the symbol.
extern "C" int sc_main(int /*argc*/, char* /*argv*/[]) { return 0; }
