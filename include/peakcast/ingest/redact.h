// Redaction of job scripts before hashing or storing (METHOD.md §3): secrets, tokens, passwords,
// API keys, private-key blocks and e-mail addresses are replaced by placeholders; user-specific
// paths (/home/<user>, /scratch/<user>, /Users/<user>, $HOME expansions) are normalized, so
// the same script run by two users, or with a rotated token, hashes the same.
// The rules are documented in docs/redaction.md.
#pragma once

#include <string>
#include <string_view>

namespace peakcast::ingest {

// Pure and deterministic; thread-safe.
std::string redact_script(std::string_view script);

// SHA-256 hex of redact_script(script). The "exact script" key.
std::string script_sha256(std::string_view script);

// Key used when a trace has no script: SHA-256 of "workload:" + identity.
std::string workload_key(std::string_view identity);

}  // namespace peakcast::ingest
