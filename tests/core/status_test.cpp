// Status: Status::ok() builds an OK Status, and an instance is tested with is_ok() or its explicit
// bool. `st.ok()` must not compile: while ok() was a static function that call built a fresh OK
// Status through the instance, so EXPECT_FALSE(validate().ok()) could never fail.
#include <string>

#include <gtest/gtest.h>

#include "peakcast/core/status.h"

namespace peakcast {
namespace {

// Found today: three assertions in reader_messages_test.cpp were vacuous this way.
template <typename S>
concept OkThroughInstance = requires(const S& s, const S* p) {
  s.ok();
  p->ok();
};
static_assert(!OkThroughInstance<Status>, "Status::ok must not be callable through an instance");
static_assert(OkThroughInstance<Result<int>>, "Result<T>::ok() stays a member test");

Status fails() { return Status::invalid("t.jsonl:3: user: empty"); }

TEST(Status, OkBuildsAnOkStatusAndInstancesAreTestedWithIsOk) {
  const Status ok = Status::ok();
  EXPECT_TRUE(ok.is_ok());
  EXPECT_TRUE(static_cast<bool>(ok));
  EXPECT_EQ(ok.kind(), ErrorKind::kOk);

  const Status bad = fails();
  EXPECT_FALSE(bad.is_ok());
  EXPECT_FALSE(static_cast<bool>(bad));
  EXPECT_EQ(bad.message(), "t.jsonl:3: user: empty");

  // Status::ok() still goes wherever a Status does: a return, a ternary, a Result's error slot.
  const Status chosen = bad.is_ok() ? Status::ok() : bad;
  EXPECT_EQ(chosen.kind(), ErrorKind::kInvalidInput);
  const Result<int> from_ok = Result<int>(Status::ok());
  EXPECT_FALSE(from_ok.ok()) << "a Result built from an OK status is an internal error, not a value";
  EXPECT_EQ(from_ok.status().kind(), ErrorKind::kInternal);
}

}  // namespace
}  // namespace peakcast
