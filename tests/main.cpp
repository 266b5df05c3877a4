// Catch2 v2 entry point for the unit tests.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

// libsystemc.so calls sc_main from its own main(); Catch2's main() is used
// instead and no test elaborates a model in this process (every simulation
// runs in a child kvmsim process), but the linker still wants the symbol
// now that the whole model library is linked in.
extern "C" int sc_main(int /*argc*/, char* /*argv*/[]) { return 0; }
