// libFuzzer target: the trace text parser and the statistics over it
// (kvmsim trace-stats). Nothing in them may throw, crash or trip a sanitizer,
// whatever the bytes; the JSON of the statistics must be dumpable.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "sim/trace/trace_parse.h"
#include "sim/trace/trace_stats.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::istringstream in(text);
  const auto s = kvmsim::trace::trace_stats(in, 1e9);
  (void)kvmsim::trace::trace_stats_text(s, "fuzz");
  (void)kvmsim::trace::trace_stats_json(s, "fuzz").dump(
      2, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  return 0;
}
