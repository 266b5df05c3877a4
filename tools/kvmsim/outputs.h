// Output files of `kvmsim run` that are never left half-written:
//   - checked before the run (a path that is empty, a directory, or in a
//     folder that cannot be created or written is a usage error, exit 2);
//   - written to a temporary file beside the target (".kvmsim-PID-NAME") and
//     renamed over it once complete; a target that is not a regular file
//     (/dev/stdout, /dev/full, a FIFO) gets the temporary in $TMPDIR and is
//     copied to at the end, every write checked;
//   - discarded (the temporary removed) when the run fails or is interrupted.
// Together with stop_signal.h this means an output is complete or absent.
#pragma once

#include <stdexcept>
#include <string>

namespace kvmsim::cli {

// A write error on an output (exit 1), with the path and the system's reason.
struct OutputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class OutputFile {
 public:
  OutputFile() = default;
  // `flag` names the option in messages ("--trace"). Throws UsageError.
  OutputFile(std::string flag, std::string path);
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  OutputFile(OutputFile&& o) noexcept;
  OutputFile& operator=(OutputFile&& o) noexcept;
  ~OutputFile();

  [[nodiscard]] bool active() const { return !path_.empty(); }
  [[nodiscard]] const std::string& path() const { return path_; }
  // Where the writer writes until commit().
  [[nodiscard]] const std::string& temp() const { return temp_; }
  // Writes `text` to the temporary file. Throws OutputError.
  void write(const std::string& text) const;
  // Moves the temporary file to the target. Throws OutputError.
  void commit();
  // Removes the temporary file (also done by the destructor unless committed).
  void discard();

 private:
  std::string flag_, path_, temp_;
  bool copy_ = false;  // the target is not a regular file: copy instead of rename
};

// --out DIR: creates DIR (and parents) now. Throws UsageError.
void prepare_out_dir(const std::string& dir);

// A `run --out DIR` that does not write its outputs must not leave the
// previous run's summary.json and histogram.txt there looking like its own,
// nor an empty directory it created: unless commit() is called, the
// destructor removes those two files from DIR, then DIR if this run created
// it and it is empty. Construct it before prepare_out_dir().
class OutDirGuard {
 public:
  OutDirGuard() = default;
  explicit OutDirGuard(std::string dir);
  OutDirGuard(const OutDirGuard&) = delete;
  OutDirGuard& operator=(const OutDirGuard&) = delete;
  ~OutDirGuard();
  void commit() { committed_ = true; }

 private:
  std::string dir_;
  bool created_ = false;
  bool committed_ = false;
};

}  // namespace kvmsim::cli
