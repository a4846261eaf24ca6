// Status and Result<T>: the one error policy for expected failures (bad input, missing files).
// Broken invariants throw (std::logic_error and friends); everything a user can cause comes back
// as a Status whose message names where (file:line: field: why) when that is known.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace peakcast {

enum class ErrorKind {
  kOk = 0,
  kInvalidInput,   // malformed data or arguments: the caller can fix the input
  kNotFound,       // a file, key or record that does not exist
  kUnsupported,    // well-formed but not something we handle (a newer model format, say)
  kIo,             // the operating system failed us (disk full, permission)
  kInternal,       // a bug; reported rather than crashing a long-running service
};

class Status {
 public:
  Status() = default;
  Status(ErrorKind kind, std::string message) : kind_(kind), message_(std::move(message)) {}

  // Status::ok() builds an OK Status. It is a nested type (a Status), not a static function, so
  // that `st.ok()` on an instance does not compile: that call would build a fresh OK Status and
  // test nothing. Test an instance with is_ok() or its explicit bool.
  class ok;
  static Status invalid(std::string m) { return {ErrorKind::kInvalidInput, std::move(m)}; }
  static Status not_found(std::string m) { return {ErrorKind::kNotFound, std::move(m)}; }
  static Status unsupported(std::string m) { return {ErrorKind::kUnsupported, std::move(m)}; }
  static Status io(std::string m) { return {ErrorKind::kIo, std::move(m)}; }
  static Status internal(std::string m) { return {ErrorKind::kInternal, std::move(m)}; }

  bool is_ok() const { return kind_ == ErrorKind::kOk; }
  explicit operator bool() const { return is_ok(); }
  ErrorKind kind() const { return kind_; }
  const std::string& message() const { return message_; }

  // Prefixes context ("trace.swf:12") to the message, keeping the kind.
  Status with_context(const std::string& where) const {
    if (is_ok()) return *this;
    return {kind_, where + ": " + message_};
  }

 private:
  ErrorKind kind_ = ErrorKind::kOk;
  std::string message_;
};

class Status::ok : public Status {
 public:
  ok() = default;
};

// A value or a Status explaining why there is none.
template <typename T>
class Result {
 public:
  Result(T value) : v_(std::move(value)) {}            // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {       // NOLINT
    if (std::get<Status>(v_).is_ok()) v_ = Status::internal("Result built from an OK status");
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  explicit operator bool() const { return ok(); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace peakcast
