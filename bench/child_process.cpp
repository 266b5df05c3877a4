// kvmsim-bench's child processes and file helpers (see child_process.h).
#include "bench/child_process.h"

#include <poll.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <sstream>
#include <stdexcept>

namespace kvmsim::bench {

bool IsFile(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool IsExecutable(const std::string& path) {
  return IsFile(path) && ::access(path.c_str(), X_OK) == 0;
}

std::string SelfExe() {
  std::vector<char> buf(4096);
  const ssize_t n = ::readlink("/proc/self/exe", buf.data(), buf.size() - 1);
  if (n <= 0)
    throw std::runtime_error(std::string("readlink /proc/self/exe: ") + std::strerror(errno));
  return std::string(buf.data(), static_cast<std::size_t>(n));
}

std::string DirName(const std::string& path) {
  const auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

void MakeDirs(const std::string& path) {
  std::string partial;
  std::stringstream ss(path);
  std::string part;
  if (!path.empty() && path[0] == '/') partial = "/";
  while (std::getline(ss, part, '/')) {
    if (part.empty()) continue;
    partial += part + "/";
    if (::mkdir(partial.c_str(), 0755) != 0 && errno != EEXIST) {
      throw std::runtime_error("mkdir " + partial + ": " + std::strerror(errno));
    }
  }
}

std::string ShellQuote(const std::vector<std::string>& argv) {
  std::string s;
  for (const auto& a : argv) {
    if (!s.empty()) s += ' ';
    const bool plain =
        !a.empty() &&
        a.find_first_not_of(
            "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.,/=+:") ==
            std::string::npos;
    s += plain ? a : "'" + a + "'";
  }
  return s;
}

namespace {

double Seconds(const timeval& tv) {
  return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) * 1e-6;
}

}  // namespace

// Runs argv as a child. stdout (and, if merge_stderr, stderr) is captured; otherwise stderr
// is inherited.
ChildResult RunChild(const std::vector<std::string>& argv, bool merge_stderr, double timeout_s) {
  int fds[2];
  if (::pipe(fds) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  std::vector<char*> cargv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);

  std::cout.flush();
  std::cerr.flush();
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    ::close(fds[0]);
    ::dup2(fds[1], STDOUT_FILENO);
    if (merge_stderr) ::dup2(fds[1], STDERR_FILENO);
    ::close(fds[1]);
    ::execvp(cargv[0], cargv.data());
    std::fprintf(stderr, "kvmsim-bench: exec %s: %s\n", cargv[0], std::strerror(errno));
    ::_exit(127);
  }
  ::close(fds[1]);
  ChildResult result;
  char buf[65536];
  for (;;) {
    if (timeout_s > 0) {
      const double left =
          timeout_s -
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      struct pollfd pfd {
        fds[0], POLLIN, 0
      };
      const int ready =
          left <= 0 ? 0 : ::poll(&pfd, 1, static_cast<int>(std::min(left * 1000.0 + 1, 6e5)));
      if (ready < 0 && errno == EINTR) continue;
      if (ready == 0) {
        if (left > 0) continue;  // poll's own cap (10 min), not the timeout
        ::kill(pid, SIGKILL);
        result.timed_out = true;
        break;
      }
    }
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n > 0) {
      result.captured.append(buf, static_cast<std::size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      break;
    }
  }
  ::close(fds[0]);
  int status = 0;
  struct rusage ru {};
  while (::wait4(pid, &status, 0, &ru) < 0) {
    if (errno != EINTR) throw std::runtime_error(std::string("wait4: ") + std::strerror(errno));
  }
  result.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  result.cpu_s = Seconds(ru.ru_utime) + Seconds(ru.ru_stime);
  result.max_rss_kb = static_cast<double>(ru.ru_maxrss);
  if (WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.exit_code = 128 + WTERMSIG(status);
  }
  return result;
}

std::string Tail(const std::string& text, std::size_t lines) {
  std::size_t pos = text.size();
  for (std::size_t n = 0; n <= lines && pos > 0;) {
    pos = text.rfind('\n', pos - 1);
    if (pos == std::string::npos) return text;
    if (pos + 1 < text.size()) ++n;
  }
  return text.substr(pos + 1);
}

}  // namespace kvmsim::bench
