// Runs a fuzz target over files and folders of inputs without libFuzzer, so
// that the kept corpus (fuzz/corpus/<target>/) and the seeds are a regression
// test in every build (ctest fuzz_corpus_*). A crash or an escaped exception
// fails the test; with the sanitizer build, so does any sanitizer report.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {
void run_file(const std::filesystem::path& p, std::size_t& n) {
  std::ifstream in(p, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
  ++n;
}
}  // namespace

int main(int argc, char* argv[]) {
  std::size_t n = 0;
  for (int i = 1; i < argc; ++i) {
    const std::filesystem::path arg(argv[i]);
    if (std::filesystem::is_directory(arg)) {
      std::vector<std::filesystem::path> files;
      for (const auto& e : std::filesystem::recursive_directory_iterator(arg))
        if (e.is_regular_file()) files.push_back(e.path());
      std::sort(files.begin(), files.end());
      for (const auto& f : files) run_file(f, n);
    } else if (std::filesystem::is_regular_file(arg)) {
      run_file(arg, n);
    } else {
      std::fprintf(stderr, "fuzz replay: no such input '%s'\n", argv[i]);
      return 2;
    }
  }
  std::printf("fuzz replay: %zu inputs, no crash\n", n);
  return n ? 0 : 2;
}
