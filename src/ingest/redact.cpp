// Redaction of job scripts before hashing (docs/redaction.md). The rules run in a fixed order
// over the whole text; every rule leaves its own placeholders (<SECRET>, <TOKEN>, <EMAIL>,
// <USER>, <GROUP>, <PRIVATE KEY>) untouched, which is what makes redaction idempotent.
// This file holds rule 1 (whitespace) and the order; the other rules live one group per file
// (redact_internal.h lists them).
#include "peakcast/ingest/redact.h"

#include <string>

#include "ingest/redact_internal.h"
#include "peakcast/core/hash.h"

namespace peakcast::ingest {
namespace {

// ---------------------------------------------------------------- rule 1: whitespace

// CRLF and lone CR become LF; spaces, tabs, \f and \v at the end of every line are dropped;
// trailing empty lines and a leading UTF-8 byte-order mark are dropped. The result has no final
// newline.
std::string normalize_whitespace(std::string_view s) {
  if (s.substr(0, 3) == "\xEF\xBB\xBF") s.remove_prefix(3);
  std::string out;
  out.reserve(s.size());
  size_t line_start = 0;  // in `out`
  auto trim_line = [&] {
    while (out.size() > line_start) {
      char c = out.back();
      if (c == ' ' || c == '\t' || c == '\f' || c == '\v') {
        out.pop_back();
      } else {
        break;
      }
    }
  };
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '\r' || c == '\n') {
      if (c == '\r' && i + 1 < s.size() && s[i + 1] == '\n') ++i;
      trim_line();
      out.push_back('\n');
      line_start = out.size();
    } else {
      out.push_back(c);
    }
  }
  trim_line();
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

}  // namespace

std::string redact_script(std::string_view script, RedactionCounts* counts) {
  using namespace redact_detail;
  RedactionCounts c;
  std::string s = normalize_whitespace(script);
  s = redact_private_key_blocks(std::move(s), c.private_keys);
  s = redact_tokens(std::move(s), c.tokens);
  s = redact_credentials(std::move(s), c.secrets);
  s = redact_secret_assignments(std::move(s), c.secrets);
  s = redact_emails(std::move(s), c.emails);
  s = redact_paths(s, c.paths);
  // Last: what the other rules redact may hold a command's name or a quote this rule reads by (a
  // `/home/lftp` path, a value with `redis-cli` in it), so it reads the text a second pass reads.
  s = redact_command_passwords(s, c.secrets);

  if (counts != nullptr) {
    counts->private_keys += c.private_keys;
    counts->tokens += c.tokens;
    counts->secrets += c.secrets;
    counts->emails += c.emails;
    counts->paths += c.paths;
  }
  return s;
}

std::string script_sha256(std::string_view script) { return sha256_hex(redact_script(script)); }

std::string workload_key(std::string_view identity) {
  std::string data = "workload:";
  data += identity;
  return sha256_hex(data);
}

}  // namespace peakcast::ingest
