// TraceInput: a trace read in steps, gzip undone as it is read (trace_input.h).
#include "trace_input.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

namespace peakcast::ingest {
namespace {

constexpr size_t kChunk = size_t{1} << 16;

}  // namespace

Result<TraceInput> TraceInput::open(const std::string& path) {
  if (path == "-") return TraceInput(STDIN_FILENO, false, path);
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return Status::invalid(path + ": is a directory");
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::not_found(path + ": " + std::strerror(errno));
  return TraceInput(fd, true, path);
}

TraceInput::TraceInput(TraceInput&& o) noexcept
    : fd_(o.fd_), owns_fd_(o.owns_fd_), path_(std::move(o.path_)), started_(o.started_),
      raw_end_(o.raw_end_), at_end_(o.at_end_), zs_(std::move(o.zs_)),
      member_done_(o.member_done_), in_buf_(std::move(o.in_buf_)), in_pos_(o.in_pos_) {
  o.fd_ = -1;
  o.owns_fd_ = false;
}

TraceInput::~TraceInput() {
  if (zs_) inflateEnd(zs_.get());
  if (owns_fd_ && fd_ >= 0) ::close(fd_);
}

Status TraceInput::corrupt() const { return Status::invalid(path_ + ": corrupt or truncated gzip data"); }

Result<bool> TraceInput::refill() {
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

Status TraceInput::start() {
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
    zs_ = std::make_unique<z_stream>();
    if (inflateInit2(zs_.get(), 15 + 32) != Z_OK) {
      zs_.reset();
      return Status::internal("zlib init failed");
    }
  }
  return Status::ok();
}

Status TraceInput::read(std::string& out, size_t max_bytes) {
  if (!started_) {
    if (Status s = start(); !s) return s;
  }
  size_t want = max_bytes;
  while (want > 0 && !at_end_) {
    Result<bool> more = refill();
    if (!more) return more.status();
    if (!*more) {
      if (zs_ && !member_done_) return corrupt();
      at_end_ = true;
      break;
    }
    const size_t avail = in_buf_.size() - in_pos_;
    if (!zs_) {
      const size_t take = std::min(avail, want);
      out.append(in_buf_, in_pos_, take);
      in_pos_ += take;
      want -= take;
      continue;
    }
    if (member_done_) {
      // More bytes after a member's end: the next member of a concatenated file.
      if (inflateReset(zs_.get()) != Z_OK) return corrupt();
      member_done_ = false;
    }
    const size_t old = out.size();
    const size_t room = std::min(want, kChunk);
    out.resize(old + room);
    zs_->next_in = reinterpret_cast<Bytef*>(in_buf_.data() + in_pos_);
    zs_->avail_in = static_cast<uInt>(avail);
    zs_->next_out = reinterpret_cast<Bytef*>(out.data() + old);
    zs_->avail_out = static_cast<uInt>(room);
    const int rc = inflate(zs_.get(), Z_NO_FLUSH);
    const size_t produced = room - zs_->avail_out;
    out.resize(old + produced);
    want -= produced;
    in_pos_ = in_buf_.size() - zs_->avail_in;
    if (rc == Z_STREAM_END) {
      member_done_ = true;
    } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
      return corrupt();
    }
  }
  return Status::ok();
}

Status TraceInput::read_rest(std::string& out) {
  while (!at_end_) {
    if (Status s = read(out, size_t{1} << 22); !s) return s;
  }
  return Status::ok();
}

}  // namespace peakcast::ingest
