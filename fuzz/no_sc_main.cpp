// libsystemc.so refers to sc_main (its own main() calls it). The fuzz targets
// have libFuzzer's main() (or replay_main.cpp) and never elaborate.
extern "C" int sc_main(int /*argc*/, char* /*argv*/[]) { return 0; }
