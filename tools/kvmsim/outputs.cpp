#include "tools/kvmsim/outputs.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <vector>

#include <fmt/format.h>

#include "tools/kvmsim/cli_checks.h"

namespace kvmsim::cli {

namespace fs = std::filesystem;

namespace {

std::string reason(int err) { return std::strerror(err); }

// Creates `temp` (empty) or fails naming the path the user gave.
void touch(const std::string& flag, const std::string& path, const std::string& temp) {
  std::FILE* f = std::fopen(temp.c_str(), "wb");
  if (!f)
    throw UsageError(
        fmt::format("{} {}: cannot write there ({}: {})", flag, path, temp, reason(errno)));
  std::fclose(f);
}

}  // namespace

void prepare_out_dir(const std::string& dir) {
  if (dir.empty()) throw UsageError("--out: the directory name is empty");
  std::error_code ec;
  const auto st = fs::status(dir, ec);
  if (fs::exists(st) && !fs::is_directory(st))
    throw UsageError(fmt::format("--out {}: exists and is not a directory", dir));
  fs::create_directories(dir, ec);
  if (ec)
    throw UsageError(fmt::format("--out {}: cannot create the directory: {}", dir, ec.message()));
}

OutDirGuard::OutDirGuard(std::string dir) : dir_(std::move(dir)) {
  std::error_code ec;
  created_ = !dir_.empty() && !fs::exists(dir_, ec);
}

OutDirGuard::~OutDirGuard() {
  if (committed_ || dir_.empty()) return;
  std::error_code ec;
  for (const char* f : {"summary.json", "histogram.txt"}) fs::remove(fs::path(dir_) / f, ec);
  if (created_ && fs::is_empty(dir_, ec)) fs::remove(dir_, ec);
}

OutputFile::OutputFile(std::string flag, std::string path)
    : flag_(std::move(flag)), path_(std::move(path)) {
  if (path_.empty()) throw UsageError(flag_ + ": the file name is empty");
  std::error_code ec;
  const fs::path p(path_);
  const auto st = fs::status(p, ec);
  if (fs::is_directory(st))
    throw UsageError(fmt::format("{} {}: is a directory, not a file", flag_, path_));
  const std::string tag = fmt::format(".kvmsim-{}-", static_cast<long>(getpid()));
  if (fs::exists(st) && !fs::is_regular_file(st)) {
    // A device or FIFO: nothing to rename over; copy to it at the end.
    copy_ = true;
    if (access(path_.c_str(), W_OK) != 0)
      throw UsageError(fmt::format("{} {}: cannot write: {}", flag_, path_, reason(errno)));
    temp_ = (fs::temp_directory_path(ec) / (tag + p.filename().string())).string();
  } else {
    if (p.has_parent_path()) {
      fs::create_directories(p.parent_path(), ec);
      if (ec)
        throw UsageError(fmt::format("{} {}: cannot create the directory {}: {}", flag_, path_,
                                     p.parent_path().string(), ec.message()));
    }
    temp_ = (p.parent_path() / (tag + p.filename().string())).string();
  }
  touch(flag_, path_, temp_);
}

OutputFile::OutputFile(OutputFile&& o) noexcept { *this = std::move(o); }

OutputFile& OutputFile::operator=(OutputFile&& o) noexcept {
  if (this != &o) {
    discard();
    flag_ = std::move(o.flag_);
    path_ = std::move(o.path_);
    temp_ = std::move(o.temp_);
    copy_ = o.copy_;
    o.path_.clear();
    o.temp_.clear();
  }
  return *this;
}

OutputFile::~OutputFile() { discard(); }

void OutputFile::discard() {
  if (!temp_.empty()) std::remove(temp_.c_str());
  temp_.clear();
}

void OutputFile::write(const std::string& text) const {
  std::FILE* f = std::fopen(temp_.c_str(), "wb");
  if (!f) throw OutputError(fmt::format("{}: cannot write: {}", temp_, reason(errno)));
  const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  const int err = errno;
  if (std::fclose(f) != 0 || !ok)
    throw OutputError(fmt::format("{}: write failed: {}", path_, reason(ok ? errno : err)));
}

void OutputFile::commit() {
  if (temp_.empty()) return;
  if (!copy_) {
    if (std::rename(temp_.c_str(), path_.c_str()) != 0)
      throw OutputError(fmt::format("{}: cannot move {} there: {}", path_, temp_, reason(errno)));
    temp_.clear();
    return;
  }
  std::FILE* in = std::fopen(temp_.c_str(), "rb");
  if (!in)
    throw OutputError(fmt::format("{}: cannot read {} back: {}", path_, temp_, reason(errno)));
  std::FILE* out = std::fopen(path_.c_str(), "wb");
  if (!out) {
    const int err = errno;
    std::fclose(in);
    throw OutputError(fmt::format("{}: cannot write: {}", path_, reason(err)));
  }
  std::vector<char> buf(1 << 16);
  std::size_t n;
  bool ok = true;
  int err = 0;
  while (ok && (n = std::fread(buf.data(), 1, buf.size(), in)) > 0) {
    ok = std::fwrite(buf.data(), 1, n, out) == n;
    if (!ok) err = errno;
  }
  std::fclose(in);
  if (std::fflush(out) != 0 && ok) {
    ok = false;
    err = errno;
  }
  if (std::fclose(out) != 0 && ok) {
    ok = false;
    err = errno;
  }
  discard();
  if (!ok) throw OutputError(fmt::format("{}: write failed: {}", path_, reason(err)));
}

}  // namespace kvmsim::cli
