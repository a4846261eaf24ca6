// A file (or standard input, or bytes in memory) read in steps, gzip undone as it is read (by
// magic bytes, not by name; concatenated members too, as `cat a.gz b.gz` makes). read_file() is
// open + read_rest(); read_trace() reads a bounded prefix, detects the format from it and reads
// the rest only when the format is known, so that a file that is no trace (/dev/urandom, a 200 MB
// binary) fails after one prefix instead of being read whole. Not thread-safe; one reader per file.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "peakcast/core/status.h"

namespace peakcast {

class InputFile {
 public:
  // Opens `path`; "-" is standard input (not closed). Errors: "PATH: is a directory",
  // "PATH: <strerror>" (kNotFound).
  static Result<InputFile> open(const std::string& path);
  // `bytes` held in memory, read as a file of them would be (gzip undone, members and all);
  // `name` stands for PATH in errors. For text that comes inside another format: a jobstats
  // AdminComment is base64 of gzip.
  static InputFile from_bytes(std::string bytes, std::string name);
  InputFile(InputFile&& other) noexcept;
  InputFile& operator=(InputFile&&) = delete;
  InputFile(const InputFile&) = delete;
  ~InputFile();

  // Appends up to `max_bytes` of (decompressed) text to `out`; fewer only at the end. Errors:
  // "PATH: <strerror>" (kIo), "PATH: corrupt or truncated gzip data" (kInvalidInput).
  Status read(std::string& out, size_t max_bytes);
  // Appends everything left.
  Status read_rest(std::string& out);
  // Reads up to `max_bytes` of (decompressed) text and keeps none of it; returns how many were
  // read, fewer only at the end. A gzip's corruption past what was read is found only by
  // inflating on to its end: memory stays bounded, and `max_bytes` bounds the time (a gzip of
  // zeros inflates a thousandfold).
  Result<size_t> skip(size_t max_bytes);
  bool at_end() const { return at_end_; }
  // Whether the input is gzip (known after the first read).
  bool compressed() const { return inflate_ != nullptr; }

 private:
  struct Inflate;  // zlib's stream state (input_file.cpp)

  InputFile(int fd, bool owns_fd, std::string path);
  // Refills in_buf_ from the file when it is used up; false at the end of the file.
  Result<bool> refill();
  Status start();  // reads the first bytes: gzip magic or not
  Status corrupt() const;

  int fd_ = -1;             // -1 for from_bytes(): in_buf_ holds everything
  bool owns_fd_ = false;    // false for standard input
  std::string path_;
  bool started_ = false;    // the first bytes were looked at (gzip magic or not)
  bool raw_end_ = false;    // the file is exhausted
  bool at_end_ = false;     // no more text will come
  // gzip: the inflate state (on the heap: zlib's state points back at its z_stream, which must
  // not move) and whether the current member ended (a next one may follow).
  std::unique_ptr<Inflate> inflate_;
  bool member_done_ = false;
  std::string in_buf_;      // bytes read from the file and not yet used
  size_t in_pos_ = 0;
};

}  // namespace peakcast
