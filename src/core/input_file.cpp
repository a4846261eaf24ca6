// InputFile: a file read in steps, gzip undone as it is read (input_file.h).
#include "peakcast/core/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

namespace peakcast {
namespace {

constexpr size_t kChunk = size_t{1} << 16;
constexpr size_t kOutChunk = size_t{1} << 15;  // inflated bytes per inflate() call

}  // namespace

struct InputFile::Inflate {
  z_stream zs{};
  bool initialised = false;
  ~Inflate() {
    if (initialised) inflateEnd(&zs);
  }
};

InputFile::InputFile(int fd, bool owns_fd, std::string path)
    : fd_(fd), owns_fd_(owns_fd), path_(std::move(path)) {}

Result<InputFile> InputFile::open(const std::string& path) {
  if (path == "-") return InputFile(STDIN_FILENO, false, path);
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return Status::invalid(path + ": is a directory");
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::not_found(path + ": " + std::strerror(errno));
  return InputFile(fd, true, path);
}

InputFile InputFile::from_bytes(std::string bytes, std::string name) {
  InputFile f(-1, false, std::move(name));
  f.in_buf_ = std::move(bytes);
  f.raw_end_ = true;  // refill() reads nothing more once in_buf_ is used up
  return f;
}

InputFile::InputFile(InputFile&& o) noexcept
    : fd_(o.fd_), owns_fd_(o.owns_fd_), path_(std::move(o.path_)), started_(o.started_),
      raw_end_(o.raw_end_), at_end_(o.at_end_), inflate_(std::move(o.inflate_)),
      member_done_(o.member_done_), in_buf_(std::move(o.in_buf_)), in_pos_(o.in_pos_) {
  o.fd_ = -1;
  o.owns_fd_ = false;
}

InputFile::~InputFile() {
  if (owns_fd_ && fd_ >= 0) ::close(fd_);
}

Status InputFile::corrupt() const { return Status::invalid(path_ + ": corrupt or truncated gzip data"); }

Result<bool> InputFile::refill() {
  if (in_pos_ < in_buf_.size()) return true;
  in_buf_.clear();
  in_pos_ = 0;
  if (raw_end_) return false;
  in_buf_.resize(kChunk);
  ssize_t n;
  do {
    n = ::read(fd_, in_buf_.data(), in_buf_.size());
  } while (n < 0 && errno == EINTR);
  if (n < 0) {
    const int err = errno;
    in_buf_.clear();
    return Status::io(path_ + ": " + std::strerror(err));
  }
  in_buf_.resize(static_cast<size_t>(n));
  if (n == 0) raw_end_ = true;
  return n > 0;
}

Status InputFile::start() {
  started_ = true;
  // Two bytes tell gzip (a pipe may hand them over one at a time).
  while (in_buf_.size() < 2 && !raw_end_) {
    std::string head = std::move(in_buf_);
    in_buf_.clear();
    in_pos_ = 0;
    Result<bool> more = refill();
    if (!more) return more.status();
    in_buf_.insert(0, head);
  }
  if (in_buf_.size() >= 2 && static_cast<unsigned char>(in_buf_[0]) == 0x1f &&
      static_cast<unsigned char>(in_buf_[1]) == 0x8b) {
    inflate_ = std::make_unique<Inflate>();
    // gzip headers only (16), not zlib's or gzip's (32): every member after the first must be
    // gzip too, and a zlib stream appended to a gzip is corrupt, not more text.
    if (inflateInit2(&inflate_->zs, 15 + 16) != Z_OK) {
      inflate_.reset();
      return Status::internal("zlib init failed");
    }
    inflate_->initialised = true;
  }
  return Status::ok();
}

Status InputFile::read(std::string& out, size_t max_bytes) {
  if (!started_) {
    if (Status s = start(); !s) return s;
  }
  size_t want = max_bytes;
  while (want > 0 && !at_end_) {
    Result<bool> more = refill();
    if (!more) return more.status();
    if (!*more) {
      if (inflate_ && !member_done_) return corrupt();
      at_end_ = true;
      break;
    }
    const size_t avail = in_buf_.size() - in_pos_;
    if (!inflate_) {
      const size_t take = std::min(avail, want);
      out.append(in_buf_, in_pos_, take);
      in_pos_ += take;
      want -= take;
      continue;
    }
    if (member_done_) {
      // More bytes after a member's end: the next member of a concatenated file.
      if (inflateReset(&inflate_->zs) != Z_OK) return corrupt();
      member_done_ = false;
    }
    z_stream& zs = inflate_->zs;
    // Into a buffer on the stack, then appended: growing `out` by a chunk to inflate into it
    // zero-filled 64 KiB per call, most of the time of a 300-byte jobstats summary.
    char produced_buf[kOutChunk];
    const size_t room = std::min(want, kOutChunk);
    // A chunk at a time: from_bytes() may hold more than zlib's uInt counts.
    const size_t feed = std::min(avail, kChunk);
    zs.next_in = reinterpret_cast<Bytef*>(in_buf_.data() + in_pos_);
    zs.avail_in = static_cast<uInt>(feed);
    zs.next_out = reinterpret_cast<Bytef*>(produced_buf);
    zs.avail_out = static_cast<uInt>(room);
    const int rc = inflate(&zs, Z_NO_FLUSH);
    const size_t produced = room - zs.avail_out;
    out.append(produced_buf, produced);
    want -= produced;
    in_pos_ += feed - zs.avail_in;
    if (rc == Z_STREAM_END) {
      member_done_ = true;
    } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
      return corrupt();
    }
  }
  return Status::ok();
}

Status InputFile::read_rest(std::string& out) {
  if (!started_) {
    if (Status s = start(); !s) return s;
  }
  // Plain text of a regular file: its size is known, so `out` grows once, not by doubling.
  struct stat st {};
  if (!inflate_ && fd_ >= 0 && ::fstat(fd_, &st) == 0 && S_ISREG(st.st_mode)) {
    const off_t pos = ::lseek(fd_, 0, SEEK_CUR);
    if (pos >= 0 && st.st_size > pos) {
      out.reserve(out.size() + (in_buf_.size() - in_pos_) + static_cast<size_t>(st.st_size - pos));
    }
  }
  while (!at_end_) {
    if (Status s = read(out, size_t{1} << 22); !s) return s;
  }
  return Status::ok();
}

Result<size_t> InputFile::skip(size_t max_bytes) {
  std::string scratch;
  size_t skipped = 0;
  while (!at_end_ && skipped < max_bytes) {
    scratch.clear();
    if (Status s = read(scratch, std::min(max_bytes - skipped, size_t{1} << 20)); !s) return s;
    skipped += scratch.size();
  }
  return skipped;
}

}  // namespace peakcast
