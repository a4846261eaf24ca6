// Redaction of job scripts before hashing or storing (docs/method.md §3): secrets, tokens, passwords,
// API keys, private-key blocks and e-mail addresses are replaced by placeholders; user-specific
// paths (/home/<user>, /scratch/<user>, /Users/<user>, /work/<group>/<user>, ~user) are
// normalized; line endings and trailing whitespace are normalized. So the same script run by two
// users, or with a rotated token, or saved with CRLF, hashes the same.
// The rules, their order and their known limits are documented in docs/redaction.md.
#pragma once

#include <string>
#include <string_view>

namespace peakcast::ingest {

// How many replacements each rule family made (for reports and tests).
struct RedactionCounts {
  int private_keys = 0;  // -----BEGIN ... PRIVATE KEY----- blocks
  int tokens = 0;        // token shapes (GitHub, Slack, AWS, Hugging Face, JWT, ...) and bearers
  int secrets = 0;       // values of secret-named assignments/flags, URL and curl credentials
  int emails = 0;        // e-mail addresses and scheduler mail directives
  int paths = 0;         // user-specific path components

  int total() const { return private_keys + tokens + secrets + emails + paths; }
};

// Pure and deterministic; thread-safe. Idempotent: redact_script(redact_script(x)) ==
// redact_script(x). When `counts` is given, the replacements made are added to it.
std::string redact_script(std::string_view script, RedactionCounts* counts = nullptr);

// SHA-256 hex of redact_script(script). The "exact script" key.
std::string script_sha256(std::string_view script);

// Key used when a trace has no script: SHA-256 of "workload:" + identity.
std::string workload_key(std::string_view identity);

}  // namespace peakcast::ingest
