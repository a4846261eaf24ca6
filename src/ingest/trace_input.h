// A trace file read in steps (internal to the readers): read_trace() reads a bounded prefix,
// detects the format from it, and reads the rest only when the format is known, so that a file
// that is no trace (/dev/urandom, a 200 MB binary) fails after one prefix instead of being read
// whole. gzip is undone as it is read (by magic bytes, concatenated members too), as
// core read_file() does; "-" reads standard input.
#pragma once

#include <zlib.h>

#include <memory>
#include <string>

#include "peakcast/core/status.h"

namespace peakcast::ingest {

class TraceInput {
 public:
  // Opens `path` (errors as read_file's: "PATH: is a directory", "PATH: <strerror>").
  static Result<TraceInput> open(const std::string& path);
  TraceInput(TraceInput&& other) noexcept;
  TraceInput& operator=(TraceInput&&) = delete;
  TraceInput(const TraceInput&) = delete;
  ~TraceInput();

  // Appends up to `max_bytes` of (decompressed) text to `out`; fewer only at the end.
  Status read(std::string& out, size_t max_bytes);
  // Appends everything left.
  Status read_rest(std::string& out);
  bool at_end() const { return at_end_; }

 private:
  TraceInput(int fd, bool owns_fd, std::string path)
      : fd_(fd), owns_fd_(owns_fd), path_(std::move(path)) {}
  // Refills in_buf_ from the file when it is used up; false at the end of the file.
  Result<bool> refill();
  Status start();  // reads the first bytes: gzip magic or not
  Status corrupt() const;

  int fd_ = -1;
  bool owns_fd_ = false;    // false for standard input
  std::string path_;
  bool started_ = false;    // the first bytes were looked at (gzip magic or not)
  bool raw_end_ = false;    // the file is exhausted
  bool at_end_ = false;     // no more text will come
  // gzip: the inflate state (on the heap: zlib's state points back at its z_stream, which must
  // not move), whether the current member ended (a next one may follow, as `cat a.gz b.gz`).
  std::unique_ptr<z_stream> zs_;
  bool member_done_ = false;
  std::string in_buf_;      // bytes read from the file and not yet used
  size_t in_pos_ = 0;
};

}  // namespace peakcast::ingest
