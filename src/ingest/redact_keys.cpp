// Redaction rules 2-4 (docs/redaction.md): private-key blocks, token shapes, authorization
// headers.
#include <cctype>
#include <string>

#include "ingest/redact_internal.h"

namespace peakcast::ingest::redact_detail {
namespace {

// ---------------------------------------------------------------- rule 2: private keys

// "-----BEGIN <anything> PRIVATE KEY<anything>-----" up to the matching "-----END ...-----"
// line (or to the end of the text when the block is cut off) becomes "<PRIVATE KEY>".
std::string redact_private_keys(std::string_view s, int& count) {
  static constexpr std::string_view kBegin = "-----BEGIN";
  std::string out;
  size_t copied = 0, pos = 0;
  while ((pos = s.find(kBegin, pos)) != std::string_view::npos) {
    size_t hdr = pos + kBegin.size();
    size_t close = s.find("-----", hdr);
    if (close == std::string_view::npos) break;
    std::string_view header = s.substr(hdr, close - hdr);
    if (header.find('\n') != std::string_view::npos ||
        header.find("PRIVATE KEY") == std::string_view::npos) {
      pos = hdr;
      continue;
    }
    size_t stop = s.size();
    size_t end_marker = s.find("-----END", close + 5);
    if (end_marker != std::string_view::npos) {
      size_t end_close = s.find("-----", end_marker + 8);
      size_t eol = s.find('\n', end_marker);
      if (end_close != std::string_view::npos && (eol == std::string_view::npos || end_close < eol)) {
        stop = end_close + 5;
      } else {
        stop = eol == std::string_view::npos ? s.size() : eol;
      }
    }
    out.append(s.substr(copied, pos - copied));
    out += "<PRIVATE KEY>";
    ++count;
    copied = pos = stop;
  }
  if (copied == 0) return std::string(s);
  out.append(s.substr(copied));
  return out;
}

// The two private-key formats without a PEM armour, up to the end of their last line (or to the
// end of the text when cut off) -> "<PRIVATE KEY>":
// - SSH2 (RFC 4716's armour, as ssh.com's and some exporters write a private key): a
//   "---- BEGIN <…>PRIVATE KEY<…> ----" line to its "---- END …" line;
// - PuTTY's .ppk: "PuTTY-User-Key-File-N:" to its "Private-MAC:" line (version 1: "Private-Hash:").
// Every search runs from where the last block ended or a header was refused, and a header is
// read on its line within 100 bytes, so the text is read once per format.
std::string redact_unarmoured_private_keys(std::string_view s, bool putty, int& count) {
  const std::string_view begin = putty ? "PuTTY-User-Key-File-" : "---- BEGIN ";
  // Where the block that starts with the header ending at `hdr` ends.
  auto block_end = [&](size_t hdr) -> size_t {
    size_t marker = std::string_view::npos;
    if (!putty) {
      marker = s.find("---- END ", hdr);
    } else {
      for (size_t p = s.find("Private-", hdr); p != std::string_view::npos; p = s.find("Private-", p + 1)) {
        if (s.compare(p + 8, 4, "MAC:") == 0 || s.compare(p + 8, 5, "Hash:") == 0) {
          marker = p;
          break;
        }
      }
    }
    if (marker == std::string_view::npos) return s.size();
    const size_t eol = s.find('\n', marker);
    return eol == std::string_view::npos ? s.size() : eol;
  };
  std::string out;
  size_t copied = 0, pos = 0;
  while ((pos = s.find(begin, pos)) != std::string_view::npos) {
    const size_t hdr = pos + begin.size();
    std::string_view line = s.substr(hdr, 100);
    line = line.substr(0, line.find('\n'));
    const size_t key = line.find("PRIVATE KEY");
    const bool header = putty ? line.size() >= 2 && std::isdigit(static_cast<unsigned char>(line[0])) && line[1] == ':'
                              : key != std::string_view::npos && line.find("----", key) != std::string_view::npos;
    if (!header) {
      pos = hdr;
      continue;
    }
    const size_t stop = block_end(hdr);
    out.append(s.substr(copied, pos - copied));
    out += "<PRIVATE KEY>";
    ++count;
    copied = pos = stop;
  }
  if (copied == 0) return std::string(s);
  out.append(s.substr(copied));
  return out;
}

// ---------------------------------------------------------------- rule 3: token shapes

const Pattern& token_shapes() {
  static const Pattern p(
      "(?<![A-Za-z0-9_>])(?:"
      "gh[pousr]_[A-Za-z0-9]{30,}"                       // GitHub classic tokens
      "|github_pat_[A-Za-z0-9_]{30,}"                    // GitHub fine-grained tokens
      "|glpat-[A-Za-z0-9_-]{20,}"                        // GitLab personal access tokens
      "|xox[abposr]-[A-Za-z0-9-]{10,}"                   // Slack tokens
      "|(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|APKA|AROA|ASCA)[A-Z0-9]{16}"
      "(?![A-Za-z0-9])"                                  // AWS access key ids
      "|hf_[A-Za-z0-9]{30,}"                             // Hugging Face
      "|AIza[0-9A-Za-z_-]{35}"                           // Google API keys
      "|npm_[A-Za-z0-9]{36}"                             // npm tokens
      "|eyJ[A-Za-z0-9_-]{8,}\\.eyJ[A-Za-z0-9_-]{8,}\\.[A-Za-z0-9_-]{8,}"  // JWTs
      "|https://hooks\\.slack\\.com/services/[A-Za-z0-9/_-]+"              // Slack webhooks
      "|nvapi-[A-Za-z0-9_-]{20,}"                        // NVIDIA API keys (NGC, build.nvidia.com)
      "|pypi-AgE[A-Za-z0-9_-]{40,}"                      // PyPI API tokens (a pypi.org macaroon)
      "|[rs]k_(?:live|test)_[A-Za-z0-9]{20,}"            // Stripe secret and restricted keys
      "|xapp-[0-9]-[A-Za-z0-9-]{10,}"                    // Slack app-level tokens
      "|SG\\.[A-Za-z0-9_-]{20,}+\\.[A-Za-z0-9_-]{30,}"   // SendGrid API keys
      "|ya29\\.[A-Za-z0-9_-]{20,}"                       // Google OAuth 2.0 access tokens
      ")");
  return p;
}

// OpenAI/Anthropic-style secret keys: "sk-" and 20 or more of [A-Za-z0-9_-] with a digit among
// them, not after [A-Za-z0-9_>] -> "<TOKEN>". By hand, in one pass: as a pattern ("sk-" then a
// look-ahead for the digit) every "sk-" of a long run of such bytes read the rest of the run.
std::string redact_sk_keys(std::string_view s, int& count) {
  auto key_byte = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-'; };
  std::string out;
  size_t copied = 0, i = 0;
  while (i < s.size()) {
    if (!key_byte(s[i])) {
      ++i;
      continue;
    }
    size_t run_end = i, last_digit = std::string_view::npos;
    for (; run_end < s.size() && key_byte(s[run_end]); ++run_end) {
      if (std::isdigit(static_cast<unsigned char>(s[run_end]))) last_digit = run_end;
    }
    // The first "sk-" of the run that may start a key (not after [A-Za-z0-9_>]) and has a digit
    // after it takes the rest of the run; a later one inside the run sees no more digits.
    for (size_t k = i; k + 3 <= run_end; ++k) {
      if (s.compare(k, 3, "sk-") != 0) continue;
      const char before = k > 0 ? s[k - 1] : ' ';
      if (std::isalnum(static_cast<unsigned char>(before)) || before == '_' || before == '>') continue;
      if (run_end - (k + 3) < 20 || last_digit == std::string_view::npos || last_digit < k + 3) break;
      out.append(s.substr(copied, k - copied));
      out += "<TOKEN>";
      ++count;
      copied = run_end;
      break;
    }
    i = run_end;
  }
  if (copied == 0) return std::string(s);
  out.append(s.substr(copied));
  return out;
}

// ---------------------------------------------------------------- rule 4: authorization headers

// "Bearer X", and "Authorization: X" with or without a scheme word before X ("Basic", "token",
// "ApiKey", "SSWS", ...), X a literal. The scheme is taken possessively: in "Authorization: ApiKey
// <SECRET>" the scheme word is never read as the value (a second pass changes nothing).
const Pattern& auth_headers() {
  static const Pattern p(
      "(\\bbearer[ \\t]+|\\bauthorization:[ \\t]*+(?:[A-Za-z][A-Za-z0-9_-]*+[ \\t]++)?+)"
      "([A-Za-z0-9._~+/=-]{8,})",
      PCRE2_CASELESS);
  return p;
}

}  // namespace

std::string redact_private_key_blocks(std::string s, int& count) {
  s = redact_private_keys(s, count);
  s = redact_unarmoured_private_keys(s, false, count);
  s = redact_unarmoured_private_keys(s, true, count);
  return s;
}

// Token shapes -> <TOKEN>; an authorization header's value -> <SECRET> (counted as a token).
std::string redact_tokens(std::string s, int& count) {
  s = replace_all(token_shapes(), s, [&](const Match&) -> Decision {
    ++count;
    return {std::string("<TOKEN>")};
  });
  s = redact_sk_keys(s, count);
  s = replace_all(auth_headers(), s, [&](const Match& m) -> Decision {
    ++count;
    return {std::string(m.group(1)) + "<SECRET>"};
  });
  return s;
}

}  // namespace peakcast::ingest::redact_detail
