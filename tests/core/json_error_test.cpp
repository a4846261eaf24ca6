// json_error_reason() keeps nlohmann's reason and drops every byte of the input it echoes: the
// daemon's refusals reach slurmctld's log, the readers' reasons a user's terminal and reports.
#include "peakcast/core/json_error.h"

#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

namespace peakcast {
namespace {

constexpr std::string_view kSecret = "wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY";

// The reason nlohmann's parser gives for `text`; empty when it parses.
std::string reason_for(const std::string& text, JsonQuote quote) {
  try {
    const nlohmann::json parsed = nlohmann::json::parse(text);
    EXPECT_FALSE(parsed.is_discarded());
  } catch (const nlohmann::json::exception& e) {
    return json_error_reason(e.what(), quote);
  }
  return {};
}

TEST(JsonErrorReason, GivesTheParsersReasonWithoutItsEcho) {
  for (JsonQuote q : {JsonQuote::kNumber, JsonQuote::kNothing}) {
    EXPECT_EQ(reason_for("{\"user\": \"a\xff\"}", q), "invalid string: ill-formed UTF-8 byte");
    EXPECT_EQ(reason_for("{\"user\": tru}", q), "invalid literal");
    EXPECT_EQ(reason_for("{\"user\": \"a\"", q), "unexpected end of input; expected '}'");
    EXPECT_EQ(reason_for("{\"user\" 1}", q), "unexpected number literal; expected ':'");
    EXPECT_EQ(reason_for("", q), "unexpected end of input; expected '[', '{', or a literal");
  }
  EXPECT_EQ(reason_for("[1e400]", JsonQuote::kNumber), "number overflow parsing '1e400'");
  EXPECT_EQ(reason_for("{\"a\": \"x\ty\"}", JsonQuote::kNumber),
            "invalid string: control character U+0009 (HT) must be escaped to \\u0009 or \\t");
}

// kNothing names neither the number nor the control character: a number of 600 digits can be a
// key written in decimal, and the daemon's reasons reach other people's logs.
TEST(JsonErrorReason, NothingQuotesNoByteOfTheInput) {
  const std::string digits(600, '7');
  const std::string overflow = reason_for("{\"key\": " + digits + "}", JsonQuote::kNothing);
  EXPECT_EQ(overflow, "number overflow: too large for a double");
  EXPECT_EQ(reason_for("{\"key\": " + digits + "}", JsonQuote::kNumber),
            "number overflow parsing '" + digits + "'");
  EXPECT_EQ(reason_for("{\"a\": \"x\ty\"}", JsonQuote::kNothing),
            "invalid string: a control character must be escaped");
}

// Found in review: the echo was cut from "; last read: '" to the last "'; expected " and what
// followed was kept, so an input holding "'; expected " put the rest of its token in the reason
// (a value's error has no "; expected" of nlohmann's own).
TEST(JsonErrorReason, AnInputThatLooksLikeTheMessageIsNotEchoed) {
  const std::string token = "x'; expected " + std::string(kSecret);
  for (const char* end : {"\x01", "\xff", "\\q", "\\u12"}) {
    for (JsonQuote q : {JsonQuote::kNumber, JsonQuote::kNothing}) {
      const std::string value = "{\"script\": \"" + token + end + "\"}";
      const std::string array = "[\"" + token + end + "\"]";
      const std::string literal = "{\"script\": t'; expected " + std::string(kSecret) + "}";
      for (const std::string& text : {value, array, literal}) {
        const std::string why = reason_for(text, q);
        EXPECT_FALSE(why.empty()) << text;
        EXPECT_EQ(why.find(kSecret.substr(0, 6)), std::string::npos) << why;
        EXPECT_EQ(why.find("last read"), std::string::npos) << why;
      }
    }
  }
}

// A message of a shape it does not know is not passed on (it might quote the input).
TEST(JsonErrorReason, AnUnknownShapeIsNotPassedOn) {
  for (JsonQuote q : {JsonQuote::kNumber, JsonQuote::kNothing}) {
    EXPECT_EQ(json_error_reason(std::string("[json.exception.parse_error.999] something about ") +
                                    std::string(kSecret),
                                q),
              "not valid JSON");
    EXPECT_EQ(json_error_reason("number overflow parsing '12" + std::string(kSecret) + "'", q),
              "number overflow: too large for a double");
    EXPECT_EQ(json_error_reason("syntax error - unexpected " + std::string(kSecret), q),
              "not valid JSON");
  }
}

}  // namespace
}  // namespace peakcast
