// kvmsim-bench's child processes and file helpers, shared by the scenario benchmark
// (bench_main.cpp) and the scale run (scale.cpp). SystemC elaborates once per process, so
// every measurement is a child: its wall time, CPU time and peak RSS come from wait4.
#pragma once

#include <string>
#include <vector>

namespace kvmsim::bench {

struct ChildResult {
  int exit_code = -1;      // exit status, or 128+signal
  bool timed_out = false;  // killed (SIGKILL) after the timeout
  double wall_s = 0;
  double cpu_s = 0;       // user + sys (the child and what it waited for)
  double max_rss_kb = 0;  // largest RSS of the child or what it waited for
  std::string captured;   // stdout (and stderr when merged)
};

// Runs argv as a child. stdout (and, if merge_stderr, stderr) is captured; otherwise stderr
// is inherited. With timeout_s > 0 the child is killed (SIGKILL) once it has run that long
// and the result says timed_out.
ChildResult RunChild(const std::vector<std::string>& argv, bool merge_stderr, double timeout_s = 0);

bool IsFile(const std::string& path);
bool IsExecutable(const std::string& path);
std::string SelfExe();  // /proc/self/exe
std::string DirName(const std::string& path);
void MakeDirs(const std::string& path);  // mkdir -p
std::string ShellQuote(const std::vector<std::string>& argv);
std::string Tail(const std::string& text, std::size_t lines);  // the last `lines` lines

}  // namespace kvmsim::bench
