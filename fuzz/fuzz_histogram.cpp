// libFuzzer target: the cyclictest -h reader and compare (kvmsim compare).
// A file either parses or gets a HistogramParseError; a parsed report compares
// with itself (W1 = KS = 0) or gets a HistogramCompareError.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "sim/core/histogram.h"
#include "sim/core/histogram_compare.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  kvmsim::CyclictestReport r;
  try {
    r = kvmsim::parse_cyclictest(text);
  } catch (const kvmsim::HistogramParseError&) {
    return 0;
  }
  try {
    const auto c = kvmsim::compare_histograms(r, r, {}, {});
    (void)kvmsim::comparison_text(c, "a", "a");
    (void)kvmsim::comparison_json(c, "a", "a");
  } catch (const kvmsim::HistogramCompareError&) {
  }
  return 0;
}
