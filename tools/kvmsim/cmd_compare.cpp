// kvmsim compare A B [--tolerance-w1 US] [--tolerance-ks X] [--tolerance-avg US]
//                    [--tolerance-p99 US] [--merge] [--json]
// Compares two cyclictest -h histograms (sim/core/histogram_compare.h).
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "sim/core/histogram.h"
#include "sim/core/histogram_compare.h"
#include "tools/kvmsim/cli_checks.h"
#include "tools/kvmsim/commands.h"

namespace kvmsim::cli {

namespace {

constexpr const char* kCompareFooter = R"(
Reads cyclictest `-q -h N` output (kvmsim run --out DIR writes DIR/histogram.txt;
real cyclictest output with one or more thread columns is read too) and prints
min/avg/max/p50/p90/p99/p99.9/samples/overflows of A and B with B - A, the
1-Wasserstein distance W1 (us) and the two-sample KS statistic over the buckets,
and one verdict line per tolerance and thread.

Tolerances: with none given, W1 <= 0.05 us and KS <= 0.02 are checked (the limits
of the T1 golden regression, tests/golden/). With any given, only the given ones
are checked. avg and p99 are checked on |B - A|. A value equal to its tolerance
passes.

Threads: thread i of A is compared with thread i of B, and both files must have
the same number of thread columns; --merge sums each file's threads first.

Overflows: W1 and KS run on buckets 0..C, C = the smaller -h of the two files;
overflows (and buckets >= C of the longer one) count in bucket C. KS is then exact
over what both histograms can see, W1 a lower bound. Avg and percentiles that
fall among overflows are lower bounds (marked >=). The avg is then taken from a
better source when there is one: a kvmsim run folder's summary.json (exact), else
the file's "# Avg Latencies" line when larger (truncated by cyclictest, so still
marked >=).

Exit status: 0 every check holds, 1 a check is exceeded, 2 a file is unreadable
or unparsable, has no samples, or the thread counts differ.)";

struct CompareArgs {
  std::string file_a, file_b;
  double w1_us = 0, ks = 0, avg_us = 0, p99_us = 0;
  CLI::Option* w1_opt = nullptr;
  CLI::Option* ks_opt = nullptr;
  CLI::Option* avg_opt = nullptr;
  CLI::Option* p99_opt = nullptr;
  bool merge = false;
  bool json = false;
};

struct InputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A kvmsim run's summary.json knows the exact average (the histogram text truncates it,
// and overflows hide the values it is made of). NaN when absent or unreadable: the
// comparison then falls back to what the histogram file says.
double summary_avg(const std::filesystem::path& dir) {
  std::ifstream f(dir / "summary.json");
  if (!f) return std::numeric_limits<double>::quiet_NaN();
  const auto j = nlohmann::json::parse(f, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("metrics") || !j["metrics"].is_object())
    return std::numeric_limits<double>::quiet_NaN();
  for (const char* key : {"cyclictest.avg_us", "cyclictest.avg_ns"}) {
    const auto it = j["metrics"].find(key);
    if (it != j["metrics"].end() && it->is_number()) return it->get<double>();
  }
  return std::numeric_limits<double>::quiet_NaN();
}

CyclictestReport read_report(std::string path) {
  std::error_code ec;
  double exact_avg = std::numeric_limits<double>::quiet_NaN();
  // A `kvmsim run --out` folder stands for its histogram.txt (as plot takes it).
  if (std::filesystem::is_directory(path, ec)) {
    const auto h = std::filesystem::path(path) / "histogram.txt";
    if (!std::filesystem::is_regular_file(h, ec))
      throw InputError(path +
                       ": a directory without histogram.txt (give a histogram file, or "
                       "a kvmsim run --out folder of a run with a histogram)");
    exact_avg = summary_avg(path);
    path = h.string();
  }
  std::ifstream f(path, std::ios::binary);
  if (!f) throw InputError(path + ": cannot read: " + std::strerror(errno));
  // In chunks: a NUL byte is refused at once and the size is bounded, so a
  // device such as /dev/zero or an endless pipe cannot hang the reader (the
  // largest histogram the reader takes, 4 M cells, is about 30 MB of text).
  constexpr std::size_t kMaxBytes = std::size_t{256} << 20;
  std::string text, chunk(1 << 16, '\0');
  while (f.read(chunk.data(), static_cast<std::streamsize>(chunk.size())) || f.gcount() > 0) {
    const auto n = static_cast<std::size_t>(f.gcount());
    if (std::memchr(chunk.data(), '\0', n))
      throw InputError(path + ": binary data (a NUL byte): not a cyclictest histogram");
    text.append(chunk.data(), n);
    if (text.size() > kMaxBytes)
      throw InputError(path + ": more than 256 MiB: not a cyclictest histogram");
  }
  if (f.bad()) throw InputError(path + ": read error");
  try {
    CyclictestReport r = parse_cyclictest(text);
    if (r.threads.size() == 1) r.threads.front().exact_avg = exact_avg;  // one thread per run
    return r;
  } catch (const HistogramParseError& e) {
    throw InputError(path + ": " + e.what());
  }
}

int run_compare(const CompareArgs& args) {
  CompareTolerances tol;
  if (args.w1_opt->count()) tol.w1_us = args.w1_us;
  if (args.ks_opt->count()) tol.ks = args.ks;
  if (args.avg_opt->count()) tol.avg_us = args.avg_us;
  if (args.p99_opt->count()) tol.p99_us = args.p99_us;
  CompareOptions opts;
  opts.merge_threads = args.merge;
  opts.name_a = args.file_a;
  opts.name_b = args.file_b;
  HistogramComparison c;
  try {
    const CyclictestReport a = read_report(args.file_a);
    const CyclictestReport b = read_report(args.file_b);
    c = compare_histograms(a, b, tol, opts);
  } catch (const std::exception& e) {  // InputError, HistogramCompareError, ...
    std::cerr << "kvmsim: error: " << e.what() << "\n";
    return 2;
  }
  std::cout << (args.json ? comparison_json(c, args.file_a, args.file_b)
                          : comparison_text(c, args.file_a, args.file_b))
            << std::flush;
  return c.pass() ? 0 : 1;
}

}  // namespace

Command add_compare_command(CLI::App& app) {
  auto args = std::make_shared<CompareArgs>();
  auto* sub = app.add_subcommand("compare", "Compare two cyclictest histograms (W1, KS, stats)");
  sub->add_option("A", args->file_a, "Reference histogram (cyclictest -h format)")->required();
  sub->add_option("B", args->file_b, "Histogram compared with A")->required();
  args->w1_opt = sub->add_option("--tolerance-w1", args->w1_us, "Max W1 distance (us)")
                     ->type_name("US")
                     ->check(number_in(0, 1e6, "us"));
  args->ks_opt = sub->add_option("--tolerance-ks", args->ks, "Max KS statistic (0..1)")
                     ->type_name("X")
                     ->check(number_in(0, 1, ""));
  args->avg_opt = sub->add_option("--tolerance-avg", args->avg_us, "Max |avg B - avg A| (us)")
                      ->type_name("US")
                      ->check(number_in(0, 1e6, "us"));
  args->p99_opt = sub->add_option("--tolerance-p99", args->p99_us, "Max |p99 B - p99 A| (us)")
                      ->type_name("US")
                      ->check(number_in(0, 1e6, "us"));
  sub->add_flag("--merge", args->merge, "Sum each file's thread columns before comparing");
  sub->add_flag("--json", args->json, "Print the comparison as JSON instead of the table");
  sub->footer(kCompareFooter);
  return {sub, [args] { return run_compare(*args); }};
}

}  // namespace kvmsim::cli
