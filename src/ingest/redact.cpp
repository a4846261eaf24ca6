// Redaction of job scripts before hashing (docs/redaction.md). The rules run in a fixed order
// over the whole text; every rule leaves its own placeholders (<SECRET>, <TOKEN>, <EMAIL>,
// <USER>, <GROUP>, <PRIVATE KEY>) untouched, which is what makes redaction idempotent.
// Patterns are PCRE2 (8-bit, byte mode, JIT when available), compiled once in function-local
// statics (thread-safe initialization); compiled code is read-only and shared, match data is
// per call.
#include "peakcast/ingest/redact.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <initializer_list>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "peakcast/core/hash.h"
#include "peakcast/core/io.h"

namespace peakcast::ingest {
namespace {

// ---------------------------------------------------------------- PCRE2 wrapper

class Pattern {
 public:
  explicit Pattern(const char* regex, uint32_t options = 0) {
    int err = 0;
    PCRE2_SIZE where = 0;
    code_ = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(regex), PCRE2_ZERO_TERMINATED, options, &err,
                          &where, nullptr);
    if (code_ == nullptr) {
      std::array<PCRE2_UCHAR, 256> buf{};
      pcre2_get_error_message(err, buf.data(), buf.size());
      throw std::logic_error("redact: bad pattern at " + std::to_string(where) + ": " +
                             reinterpret_cast<const char*>(buf.data()));
    }
    pcre2_jit_compile(code_, PCRE2_JIT_COMPLETE);  // failure is fine: the interpreter is used
  }
  ~Pattern() { pcre2_code_free(code_); }
  Pattern(const Pattern&) = delete;
  Pattern& operator=(const Pattern&) = delete;
  const pcre2_code* get() const { return code_; }

 private:
  pcre2_code* code_ = nullptr;
};

struct Match {
  std::string_view subject;
  const PCRE2_SIZE* ov = nullptr;
  int groups = 0;

  size_t begin(int i = 0) const { return ov[2 * i]; }
  size_t end(int i = 0) const { return ov[2 * i + 1]; }
  bool has(int i) const { return i < groups && ov[2 * i] != PCRE2_UNSET; }
  std::string_view group(int i) const {
    if (!has(i)) return {};
    return subject.substr(ov[2 * i], ov[2 * i + 1] - ov[2 * i]);
  }
};

// What a rule callback decides for one match.
struct Decision {
  std::optional<std::string> replacement;  // nullopt: keep the text
  size_t resume = 0;                       // when kept: where to search next (0: match end)
  size_t end = 0;  // when replaced: where the replaced text ends (0: the match's end), for a
                   // rule that reads past its pattern's match
};

// Per thread: a JIT stack larger than PCRE2's 32 KiB default, in a match context. The patterns
// are written so that no match needs much of it (no repeated group runs unbounded); a match that
// still runs out falls back to the interpreter, whose frames live on the heap (PCRE2's 20 MB heap
// limit), so a script never fails redaction for the JIT's stack.
pcre2_match_context* match_context() {
  struct Context {
    pcre2_match_context* context = pcre2_match_context_create(nullptr);
    pcre2_jit_stack* stack = pcre2_jit_stack_create(32 * 1024, 1024 * 1024, nullptr);
    Context() {
      if (context != nullptr && stack != nullptr) pcre2_jit_stack_assign(context, nullptr, stack);
    }
    ~Context() {
      pcre2_jit_stack_free(stack);
      pcre2_match_context_free(context);
    }
  };
  thread_local Context c;
  return c.context;
}

int match(const Pattern& p, std::string_view s, size_t offset, uint32_t options, pcre2_match_data* md) {
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(s.data());
  int rc = pcre2_match(p.get(), subject, s.size(), offset, options, md, match_context());
  if (rc == PCRE2_ERROR_JIT_STACKLIMIT)
    rc = pcre2_match(p.get(), subject, s.size(), offset, options | PCRE2_NO_JIT, md, match_context());
  return rc;
}

// Replaces every match for which `decide` returns a replacement. Searching continues after a
// replaced match, or at Decision::resume after a kept one (so a rejected long candidate does not
// hide a shorter one inside it).
template <typename Fn>
std::string replace_all(const Pattern& p, std::string_view s, Fn&& decide) {
  using MatchData = std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)>;
  MatchData md(pcre2_match_data_create_from_pattern(p.get(), nullptr), &pcre2_match_data_free);
  if (!md) throw std::bad_alloc();
  std::string out;
  size_t copied = 0;
  size_t offset = 0;
  while (offset <= s.size()) {
    int rc = match(p, s, offset, 0, md.get());
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      std::array<PCRE2_UCHAR, 256> buf{};
      pcre2_get_error_message(rc, buf.data(), buf.size());
      throw std::runtime_error(std::string("redact: match failed: ") +
                               reinterpret_cast<const char*>(buf.data()));
    }
    Match m{s, pcre2_get_ovector_pointer(md.get()), rc};
    Decision d = decide(m);
    size_t b = m.begin(), e = m.end();
    if (d.replacement) {
      if (d.end > e) e = d.end;
      out.append(s.substr(copied, b - copied));
      out += *d.replacement;
      copied = e;
      offset = e > b ? e : b + 1;
    } else {
      size_t next = d.resume != 0 ? d.resume : e;
      offset = next > b ? next : b + 1;
    }
  }
  if (copied == 0) return std::string(s);
  out.append(s.substr(copied));
  return out;
}

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

// ---------------------------------------------------------------- rule 4: credentials

// scheme://user:password@host; the user may be empty (redis://:password@host).
const Pattern& url_credentials() {
  static const Pattern p("\\b([A-Za-z][A-Za-z0-9+.-]*://)([^\\s/:@<>\"']*+):([^\\s/@<>\"']+)@");
  return p;
}

// A pre-signed URL's credential in its query string: Azure SAS `sig`, AWS SigV4 `X-Amz-Signature`,
// `X-Amz-Credential` (its access key id may already be <TOKEN>), `X-Amz-Security-Token`, SigV2
// `Signature`, GCS `X-Goog-Signature` / `X-Goog-Credential`. Group 1: up to the value, 2: the value
// (to `&`, `#`, a blank, a quote, `<`, `>` or a `\`, an earlier placeholder being part of it).
const Pattern& signed_url_params() {
  static const Pattern p(
      "([?&](?:sig|Signature|(?i:x-amz-(?:signature|credential|security-token)|x-goog-(?:signature|credential)))=)"
      "((?:<(?:TOKEN|SECRET)>|[^\\s&#\"'<>\\\\])++)");
  return p;
}

// -u user:password (or glued: -uuser:password) / --user user:password, and the proxy's -U /
// --proxy-user; only on lines that run curl (checked by the caller). The user may be a reference
// (`$USER:pw`, `${USER}:pw`: until 2026-12-06 these kept the password, and the proxy's were not
// read); a password that starts with `$` is one.
const Pattern& curl_user() {
  static const Pattern p(
      "((?<![A-Za-z0-9_-])(?:-[uU](?:[ \\t]+|=)?|--(?:proxy-)?user(?:[ \\t]+|=))[\"']?)"
      "((?:\\$\\{[A-Za-z_][A-Za-z0-9_]*+\\}|\\$[A-Za-z_][A-Za-z0-9_]*+|[^\\s:\"'<$])++):([^\\s\"'<$]+)");
  return p;
}

// Which lines run a command: the command's words and the line breaks are found once over the
// text, so each match of a flag asks in O(log n) whether its line names the command before it (a
// scan back to the line's start for every match was quadratic on one long line).
//
// With Scope::kCommand a word counts only where a command's name stands (after the start, a
// blank, `/`, `(`, a backtick, a quote, `;`, `|` or `&`; before a blank, the end, a quote, `;`,
// `|`, `&` or `)`: not `x.7z`), a line ending in `\` goes on on the next, and the command ends at
// `;`, `|` or `&` outside quotes (`&&`, `||`, a pipe, a list; not the `&` of `2>&1` or `&>`).
// Quotes are read as read_value() reads a value (`"…"` and `$'…'` with `\` escapes, `'…'`
// without; not closed: to the line's end), so a value a rule redacts keeps its quotes' pairing,
// and a second pass cuts the command where the first did. Until 2026-12-06 the command ran to the
// line's end (`7z x a.7z && mkdir -pv out` lost its `v`).
class CommandLines {
 public:
  enum class Scope { kLine, kCommand };
  CommandLines(std::string_view s, std::initializer_list<std::string_view> words, Scope scope = Scope::kLine) {
    const bool command = scope == Scope::kCommand;
    auto before_ok = [&](size_t p) {
      if (p == 0) return true;
      const char c = s[p - 1];
      if (!command) return !std::isalnum(static_cast<unsigned char>(c));
      return std::string_view(" \t\n/(`\"';|&").find(c) != std::string_view::npos;
    };
    auto after_ok = [&](size_t e) {
      if (e == s.size()) return true;
      const char c = s[e];
      if (!command) return !std::isalnum(static_cast<unsigned char>(c));
      return std::string_view(" \t\n\"';|&)").find(c) != std::string_view::npos;
    };
    for (std::string_view w : words) {
      for (size_t p = s.find(w); p != std::string_view::npos; p = s.find(w, p + 1)) {
        if (before_ok(p) && after_ok(p + w.size())) ends_.push_back(p + w.size());
      }
    }
    std::sort(ends_.begin(), ends_.end());
    if (ends_.empty()) return;  // the command is not run: no break matters
    if (!command) {
      for (size_t p = s.find('\n'); p != std::string_view::npos; p = s.find('\n', p + 1)) breaks_.push_back(p);
      return;
    }
    // The `&` of `2>&1`, `<&3`, `&>log`; not one after a placeholder (`-P<SECRET>&`: the value a
    // rule left there ended before the `&` when it was read).
    auto redirection = [&](size_t p) {
      if (p + 1 < s.size() && s[p + 1] == '>') return true;
      if (p == 0 || (s[p - 1] != '>' && s[p - 1] != '<')) return false;
      const std::string_view before = s.substr(0, p);
      return !before.ends_with("<SECRET>") && !before.ends_with("<USER>");
    };
    quote_at_.assign(s.size() + 1, 0);
    char quote = 0;
    // Inside `$(…)` or backticks (on the line) a `;` or `|` ends the substituted command, not the
    // one around it (`7z a $(ls; echo) -pPW`); a command in there runs to the line's end, as all
    // did until 2026-12-06.
    size_t depth = 0;
    bool backtick = false;
    for (size_t p = 0; p < s.size(); ++p) {
      quote_at_[p] = quote;
      const char c = s[p];
      if (c == '\n') {
        if (p > 0 && s[p - 1] == '\\') continue;  // the command goes on on the next line
        breaks_.push_back(p);
        quote = 0, depth = 0, backtick = false;
      } else if (quote == 0 && (c == ';' || c == '|' || (c == '&' && !redirection(p)))) {
        if (depth == 0 && !backtick) breaks_.push_back(p);
      } else if (quote == 0 && (c == '`' || (c == '(' && (depth > 0 || (p > 0 && s[p - 1] == '$'))) ||
                                (c == ')' && depth > 0))) {
        if (c == '`') backtick = !backtick;
        if (c == '(') ++depth;
        if (c == ')') --depth;
      } else {
        const size_t from = p;
        quote = quote_after(s, p, quote);
        if (p > from) quote_at_[p] = quote_at_[from];  // an escaped byte
      }
    }
    quote_at_[s.size()] = quote;
  }
  // Whether `replacement`, put for the text from `begin` to `end`, leaves every command where it
  // was: no command ends inside that text, and after the replacement the quotes stand open as
  // after the text. (Not so where a value's quote closes a string the command stands in, as in
  // `"zip -P"&"`: the text is then kept, or a second pass would cut the command elsewhere.)
  // A text that ends in `\` or `$` is kept too: the byte after it would no longer be escaped (a
  // quote, a newline that continues the command), or a quote after it no longer open `$'…'`; so
  // is one with a parenthesis or backtick outside quotes (a substitution would start or end
  // elsewhere).
  bool keeps_commands(std::string_view s, size_t begin, size_t end, std::string_view replacement) const {
    if (quote_at_.empty()) return true;
    if (end > begin && (s[end - 1] == '\\' || s[end - 1] == '$')) return false;
    for (size_t p = begin; p < end; ++p) {  // a substitution opened or closed inside (read once: replaced)
      if (quote_at_[p] == 0 && (s[p] == '(' || s[p] == ')' || s[p] == '`')) return false;
    }
    const auto next_break = std::lower_bound(breaks_.begin(), breaks_.end(), begin);
    if (next_break != breaks_.end() && *next_break < end) return false;
    char quote = quote_at_[begin];
    for (size_t p = 0; p < replacement.size(); ++p) quote = quote_after(replacement, p, quote);
    return quote == quote_at_[end];
  }
  // Whether one of the words ends at or before `pos` on the line (or command) that holds `pos`.
  bool runs_before(size_t pos) const {
    const auto next_break = std::lower_bound(breaks_.begin(), breaks_.end(), pos);
    const size_t bol = next_break == breaks_.begin() ? 0 : *(next_break - 1) + 1;
    const auto end = std::upper_bound(ends_.begin(), ends_.end(), bol);
    return end != ends_.end() && *end <= pos;
  }

 private:
  // The quote open after the byte at `p` (`'`, `"`, or 'A' for `$'…'`; 0 for none) when `quote`
  // was open before it; past a `\` (outside `'…'`) `p` moves on to the byte it escapes.
  static char quote_after(std::string_view s, size_t& p, char quote) {
    const char c = s[p];
    if (quote == '\'') return c == '\'' ? 0 : quote;
    if (c == '\\') {
      if (p + 1 < s.size() && s[p + 1] != '\n') ++p;
      return quote;
    }
    if (quote != 0) return c == (quote == 'A' ? '\'' : '"') ? 0 : quote;
    if (c == '\'' || c == '"') return c == '\'' && p > 0 && s[p - 1] == '$' ? 'A' : c;
    return 0;
  }

  std::vector<size_t> ends_, breaks_;
  std::vector<char> quote_at_;  // Scope::kCommand: the quote open before each byte (and the end)
};

// A short `-p` flag with its value: glued (`-pSECRET`, group 2) or after a space or '=' (group 3).
const Pattern& short_p_flag() {
  static const Pattern p(
      "(?<![^ \\t])(-p)(?:('[^'\\n]*'|\"[^\"\\n]*\"|[^\\s=\"'<$;&|()`,][^\\s;&|()<>'\"`,]*+)|"
      "(?:[ \\t]+|=)(?=[^\\s-]))");
  return p;
}

// sshpass -p password: up to the value, which read_value() reads (a quoted one whole, blanks
// and all).
const Pattern& sshpass() {
  static const Pattern p("\\bsshpass[ \\t]+-p[ \\t]*+");
  return p;
}

// wandb login [--flags] KEY: the API key is a positional argument (--host takes a value).
const Pattern& wandb_login() {
  static const Pattern p(
      "(\\bwandb[ \\t]+login(?:[ \\t]+(?:--host(?:=|[ \\t]+)[^\\s]+|--?[A-Za-z][A-Za-z-]*"
      "(?:=[^\\s]*)?))*[ \\t]+[\"']?)([A-Za-z0-9][A-Za-z0-9_.-]*)(?![^\\s;&|)\"'])");
  return p;
}

// aws configure set [--profile P] NAME VALUE: the AWS CLI storing a setting; NAME may be
// `default.NAME` or `profile.P.NAME`. Group 1: NAME (the value is read by read_value(), and
// taken only under a secret name: aws_secret_access_key, aws_session_token, not region).
const Pattern& aws_configure_set() {
  static const Pattern p(
      "\\baws(?:[ \\t]+--[A-Za-z][A-Za-z-]*+(?:=[^\\s]*+|[ \\t]+[^\\s-][^\\s]*+)?){0,4}"
      "[ \\t]+configure[ \\t]+set(?:[ \\t]+--[A-Za-z][A-Za-z-]*+(?:=[^\\s]*+|[ \\t]+[^\\s-][^\\s]*+)?){0,4}"
      "[ \\t]+(?:[A-Za-z0-9_-]++\\.){0,2}+([A-Za-z0-9_]++)[ \\t]+");
  return p;
}

// csh/tcsh `setenv NAME VALUE` (no `=`: the assignment rule does not read it). Group 1: NAME
// (the value is read by read_value(), and taken only under a secret name).
const Pattern& csh_setenv() {
  static const Pattern p("(?<![A-Za-z0-9_-])setenv[ \\t]++([A-Za-z_][A-Za-z0-9_]*+)[ \\t]++");
  return p;
}

// A netrc entry the script writes (a heredoc, or echo/printf into ~/.netrc): `machine H` (or
// `default`), any number of `login U` / `account A`, then `password P`, on one line or over
// several, the pieces apart by blanks, newlines or a written `\n`; up to the password's value.
// `default` needs a login or account after it ("the default password" is prose).
const Pattern& netrc_password() {
  static const Pattern p(
      "(?<![A-Za-z0-9_-])(?:machine(?:[ \\t\\n]|\\\\n)++[^\\s\\\\]++"
      "(?:(?:[ \\t\\n]|\\\\n)++(?:login|account)(?:[ \\t\\n]|\\\\n)++[^\\s\\\\]++)*+|"
      "default(?:(?:[ \\t\\n]|\\\\n)++(?:login|account)(?:[ \\t\\n]|\\\\n)++[^\\s\\\\]++)++)"
      "(?:[ \\t\\n]|\\\\n)++password[ \\t]+");
  return p;
}

// ---------------------------------------------------------------- rule 5: secret assignments

// NAME=VALUE, NAME: VALUE, --NAME=VALUE, --NAME VALUE, "NAME": "VALUE", env["NAME"] = VALUE, and
// Perl's, PHP's or Ruby's fat comma NAME => VALUE (the caller takes only a quoted VALUE): the
// part up to the value. Group 1: dashes, 2: quote around the name, 3: name, 4: separator. The
// value is read by read_value(), and only after a secret name: a pattern that matched the value too
// read a whole `a:b:c:...` run for every name in it, quadratic in the length of such a run.
const Pattern& assignments() {
  static const Pattern p(
      "(?<![A-Za-z0-9_$./>-])(?<!\\$\\{)(-{0,2})([\"']?)([A-Za-z_][A-Za-z0-9_.-]*+)\\2\\]?"
      "([ \\t]*=>[ \\t]*|[ \\t]*[=:][ \\t]*|[ \\t]+)");
  return p;
}

bool space_byte(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'; }

// The bare word at `pos`: not starting with = or :, ending at white space or one of `stop`
// (by default ;&|()<>'"`,]); nullopt when none starts there.
constexpr std::string_view kWordStop = ";&|()<>'\"`,]";
std::optional<size_t> bare_word_end(std::string_view s, size_t pos, std::string_view stop = kWordStop) {
  if (pos >= s.size()) return std::nullopt;
  const char first = s[pos];
  if (space_byte(first) || stop.find(first) != std::string_view::npos || first == '=' || first == ':')
    return std::nullopt;
  // A placeholder an earlier rule left inside the word (/home/<USER>/x) is part of it, so that a
  // second pass reads the value the first one did (redaction stays idempotent).
  static constexpr std::array<std::string_view, 5> kPlaceholders = {"<USER>", "<GROUP>", "<SECRET>",
                                                                   "<TOKEN>", "<EMAIL>"};
  size_t i = pos + 1;
  while (i < s.size() && !space_byte(s[i])) {
    if (s[i] == '<') {
      const auto* ph = std::find_if(kPlaceholders.begin(), kPlaceholders.end(),
                                    [&](std::string_view p) { return s.substr(i).starts_with(p); });
      if (ph == kPlaceholders.end()) break;
      i += ph->size();
      continue;
    }
    if (stop.find(s[i]) != std::string_view::npos) break;
    ++i;
  }
  return i;
}

// A value as the script writes it: a quoted string (`"…"`, `'…'`, ANSI-C `$'…'`, locale `$"…"`,
// the last two literals, not expansions) or a bare word. `literal` is what lies inside the
// quotes; `open` and `close` are the quoting kept around its placeholder.
struct Value {
  size_t end = 0;          // where the value ends in the text
  std::string_view open;   // `"`, `'`, `$'`, `$"`; empty for a bare word
  std::string_view close;  // the closing quote; empty for a bare word or a string not closed
  std::string_view literal;
  bool unclosed() const { return !open.empty() && close.empty(); }
};

// The value that starts at `pos`; nullopt when none does. A quoted string not closed on its line
// (a shell string may go on over the next) is read to the line's end: at least that much is a
// secret, and never a line more, so that no redaction joins lines (which would move a later
// value's neighbourhood and make a second pass differ from the first). Backslash escapes are
// read inside `"…"`, `$'…'` and `$"…"` (a `\"` does not end the string); `'…'` has none. A bare
// word ends at white space or one of `stop`.
std::optional<Value> read_value(std::string_view s, size_t pos, std::string_view stop = kWordStop) {
  if (pos >= s.size()) return std::nullopt;
  size_t open = 0;
  if (s[pos] == '"' || s[pos] == '\'') {
    open = 1;
  } else if (s[pos] == '$' && pos + 1 < s.size() && (s[pos + 1] == '\'' || s[pos + 1] == '"')) {
    open = 2;
  }
  Value v;
  if (open == 0) {
    const std::optional<size_t> end = bare_word_end(s, pos, stop);
    if (!end) return std::nullopt;
    v.end = *end;
    v.literal = s.substr(pos, *end - pos);
    return v;
  }
  const char quote = s[pos + open - 1];
  size_t i = pos + open;
  for (; i < s.size() && s[i] != '\n' && s[i] != quote; ++i) {
    if ((open == 2 || quote == '"') && s[i] == '\\' && i + 1 < s.size() && s[i + 1] != '\n') ++i;
  }
  v.open = s.substr(pos, open);
  v.literal = s.substr(pos + open, i - (pos + open));
  if (i < s.size() && s[i] == quote) {
    v.close = s.substr(i, 1);
    ++i;
  }
  v.end = i;
  return v;
}

// Where the shell word ends whose bare first part, read by read_value() from `start`, ends at
// `end`: glued to it, a `\`-escaped byte (not a newline), a quoted string closed on its line that
// does not start with a blank, and more bare bytes; up to white space or one of ;&|()<>`,] (as
// for a bare word). A quote that is not closed on its line, or opens a blank, is taken to close a
// string the assignment stands in (`echo "export TOKEN=abc" >> f`) and ends the word.
size_t shell_word_end(std::string_view s, size_t start, size_t end) {
  size_t i = end, backslashes = 0;
  while (backslashes < end - start && s[end - 1 - backslashes] == '\\') ++backslashes;
  if (backslashes % 2 == 1) {  // the bare part stopped at an escaped byte
    if (i >= s.size() || s[i] == '\n') return end;
    ++i;
  }
  static constexpr std::string_view kStop = ";&|()<>`,]";
  while (i < s.size()) {
    const char c = s[i];
    if (c == '\\') {
      if (i + 1 >= s.size() || s[i + 1] == '\n') break;
      i += 2;
    } else if (c == '"' || c == '\'') {
      if (i + 1 < s.size() && (s[i + 1] == ' ' || s[i + 1] == '\t')) break;
      size_t j = i + 1;
      for (; j < s.size() && s[j] != '\n' && s[j] != c; ++j) {
        if (c == '"' && s[j] == '\\' && j + 1 < s.size() && s[j + 1] != '\n') ++j;
      }
      if (j >= s.size() || s[j] != c) break;
      i = j + 1;
    } else if (space_byte(c) || kStop.find(c) != std::string_view::npos) {
      break;
    } else {
      ++i;
    }
  }
  return i;
}

// The replacement of the text from `from` to the end of the secret value `v`, read at `at`: the
// value's quotes kept around <SECRET>; with `whole_word`, a bare value glued to more of its shell
// word goes whole (shell_word_end), as one bare <SECRET>.
Decision secret_value(std::string_view s, size_t from, size_t at, const Value& v, bool whole_word) {
  std::string out(s.substr(from, at - from));
  if (whole_word && v.open.empty()) {
    if (const size_t end = shell_word_end(s, at, v.end); end > v.end) {
      out += "<SECRET>";
      return {std::move(out), 0, end};
    }
  }
  out += v.open;
  out += "<SECRET>";
  out += v.close;
  return {std::move(out), 0, v.end};
}

// `${NAME:-WORD}`, `${NAME-WORD}`, `${NAME:=WORD}`, `${NAME=WORD}`: a reference, but WORD is a
// literal the script holds. Where that literal lies: inside the quotes when WORD is one quoted
// string, else all of WORD, to the line's end when the expansion is not closed there (as for an
// unclosed quoted value).
struct DefaultWord {
  size_t begin = 0, end = 0;  // the literal
  size_t expansion_end = 0;   // after the closing '}', or the line's end
  std::string_view literal(std::string_view s) const { return s.substr(begin, end - begin); }
};

// The default of the expansion at `pos` ("${"); nullopt when none starts there.
std::optional<DefaultWord> default_word(std::string_view s, size_t pos) {
  auto name_byte = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  if (s.substr(pos, 2) != "${") return std::nullopt;
  size_t i = pos + 2;
  const size_t name = i;
  while (i < s.size() && name_byte(s[i])) ++i;
  if (i == name || std::isdigit(static_cast<unsigned char>(s[name]))) return std::nullopt;
  if (i < s.size() && s[i] == ':') ++i;
  if (i >= s.size() || (s[i] != '-' && s[i] != '=')) return std::nullopt;
  const size_t word = ++i;
  const bool ansi = word + 1 < s.size() && s[word] == '$' && (s[word + 1] == '\'' || s[word + 1] == '"');
  // A word that starts as a reference (`${T:-$OTHER}`, `${T:-${U:-x}}`) has no literal at its
  // start, and one inside it is read at its own `${`. Not scanned: a nest of them would be read
  // once per level.
  if (word < s.size() && s[word] == '$' && !ansi) return DefaultWord{word, word, word};
  const size_t open = ansi ? 2 : (word < s.size() && (s[word] == '"' || s[word] == '\'')) ? 1 : 0;
  int depth = 0;
  char quote = 0;
  bool quote_escapes = false;                   // "…" and $'…' read backslashes, '…' does not
  size_t first_close = std::string_view::npos;  // where the first quoted string in WORD ends
  for (; i < s.size() && s[i] != '\n'; ++i) {
    const char c = s[i];
    const bool escapes_next = c == '\\' && i + 1 < s.size() && s[i + 1] != '\n';
    if (quote != 0) {
      if (c == quote) {
        quote = 0;
        if (first_close == std::string_view::npos) first_close = i;
      } else if (escapes_next && quote_escapes) {
        ++i;
      }
      continue;
    }
    if (escapes_next) {
      ++i;
    } else if (c == '\'' || c == '"') {
      quote = c;
      quote_escapes = c == '"' || (i > 0 && s[i - 1] == '$');
    } else if (c == '$' && i + 1 < s.size() && s[i + 1] == '{') {
      ++depth;
      ++i;
    } else if (c == '}') {
      if (depth == 0) break;
      --depth;
    }
  }
  DefaultWord d{word, i, i};
  if (i < s.size() && s[i] == '}') {
    d.expansion_end = i + 1;
    if (open > 0 && first_close + 1 == i) {  // one quoted string: its inside
      d.begin = word + open;
      d.end = i - 1;
    }
  }
  return d;
}

// Splits a variable or flag name into lower-case words at non-alphanumerics and camelCase humps.
std::vector<std::string> name_words(std::string_view name) {
  std::vector<std::string> words;
  std::string cur;
  for (size_t i = 0; i < name.size(); ++i) {
    auto c = static_cast<unsigned char>(name[i]);
    if (!std::isalnum(c)) {
      if (!cur.empty()) words.push_back(std::move(cur)), cur.clear();
      continue;
    }
    if (std::isupper(c) && i > 0 && std::islower(static_cast<unsigned char>(name[i - 1])) &&
        !cur.empty()) {
      words.push_back(std::move(cur)), cur.clear();
    }
    cur.push_back(static_cast<char>(std::tolower(c)));
  }
  if (!cur.empty()) words.push_back(std::move(cur));
  return words;
}

bool secret_name(std::string_view name) {
  static const std::array<std::string_view, 14> kWords = {
      "token",       "secret",    "secrets",   "password",   "passwd",    "passphrase", "credential",
      "credentials", "apikey",    "accesskey", "secretkey",  "privatekey", "authtoken", "sshpass"};
  auto words = name_words(name);
  for (const auto& w : words) {
    for (auto k : kWords) {
      if (w == k) return true;
    }
    // Glued prefixes: PGPASSWORD, DBPASSWD.
    if (w.ends_with("password") || w.ends_with("passwd")) return true;
  }
  // DB_PASS, SMTP_PASS, PASS (not BYPASS: one word).
  for (const auto& w : words) {
    if (w == "pass") return true;
  }
  // *_KEY, api-key, AccessKey; MYSQL_PWD, DB_PWD, DB_PW (PWD alone is the working directory).
  return words.size() >= 2 && (words.back() == "key" || words.back() == "pwd" || words.back() == "pw");
}

// Values that cannot be a literal secret: references ($VAR, ${VAR}, $(cmd); `$'…'` and `$"…"`
// are quoted literals, not references), placeholders (<...>), booleans, short numbers.
bool harmless_value(std::string_view v);

// The length of the reference at the start of `v`: `$NAME`, `$1`, `$@` (one special byte),
// `${…}` or `$(…)` to its matching close; 0 when none starts there or it is not closed in `v`.
size_t reference_length(std::string_view v) {
  if (v.size() < 2 || v[0] != '$') return 0;
  const char c = v[1];
  if (c == '{' || c == '(') {
    const char close = c == '{' ? '}' : ')';
    int depth = 0;
    for (size_t i = 1; i < v.size(); ++i) {
      if (v[i] == c) ++depth;
      if (v[i] == close && --depth == 0) return i + 1;
    }
    return 0;
  }
  if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
    size_t i = 2;
    while (i < v.size() && (std::isalnum(static_cast<unsigned char>(v[i])) || v[i] == '_')) ++i;
    return i;
  }
  const bool special = std::isdigit(static_cast<unsigned char>(c)) || std::string_view("@*#?$!-").find(c) != std::string_view::npos;
  return special ? 2 : 0;
}

// A value that starts with references: harmless unless a literal is glued to them (`${X}literal`,
// `$1abc`: a letter or digit right after the last). A path under them (`$HOME/.token`),
// punctuation (`${A}:${B}`, `${NAME}_x`, `$DIR.key`), a blank, or a short number stays harmless.
// Whether, after the references `t` starts with (none or more), a literal follows glued. Not after
// an expansion with an operator (`${X:-a b}`) or a command substitution: those may hold blanks, so
// a bare value read before a rule redacted inside them stopped in them, and one read after did
// not (a second pass would then differ).
bool literal_after_references(std::string_view t) {
  size_t i = 0, last = 0;
  for (size_t n; i < t.size() && (n = reference_length(t.substr(i))) > 0;) last = i, i += n;
  if (i > 0 && t[last + 1] == '(') return false;
  if (i > 0 && t[last + 1] == '{') {
    size_t k = last + 2;
    while (k < i && (std::isalnum(static_cast<unsigned char>(t[k])) || t[k] == '_')) ++k;
    if (k != i - 1) return false;  // not `${NAME}`
  }
  const std::string_view rest = t.substr(i);
  return !rest.empty() && std::isalnum(static_cast<unsigned char>(rest[0])) && !harmless_value(rest);
}

bool harmless_reference(std::string_view v) {
  // `$` alone, or a `${`/`$(` not closed in the value: as before
  return reference_length(v) == 0 || !literal_after_references(v);
}

bool harmless_value(std::string_view v) {
  if (v.empty() || v[0] == '<') return true;
  if (v[0] == '$') return !(v.size() > 1 && (v[1] == '\'' || v[1] == '"')) && harmless_reference(v);
  static const std::array<std::string_view, 8> kLiterals = {"true", "false", "yes", "no",
                                                            "none", "null",  "on",  "off"};
  std::string lv = lower(v);
  for (auto k : kLiterals) {
    if (lv == k) return true;
  }
  if (v.size() < 10) {
    bool number = true, digit = false;
    for (char c : v) {
      if (std::isdigit(static_cast<unsigned char>(c))) {
        digit = true;
      } else if (c != '.' && c != 'e' && c != 'E' && c != '-' && c != '+') {
        number = false;
      }
    }
    bool has_dot_or_exp = v.find_first_of(".eE") != std::string_view::npos;
    if (number && digit && (has_dot_or_exp || v.size() < 6)) return true;
  }
  return false;
}

// `${NAME:-WORD}` and its kin under a secret NAME, anywhere (its own assignment, a flag's value,
// a heredoc): WORD, a literal, becomes <SECRET>. Group 1: NAME.
const Pattern& expansion_defaults() {
  static const Pattern p("\\$\\{([A-Za-z_][A-Za-z0-9_]*+):?[-=]");
  return p;
}

// The text from `from` to `to` with the default's literal replaced.
std::string with_secret_default(std::string_view s, size_t from, const DefaultWord& d, size_t to) {
  std::string out(s.substr(from, d.begin - from));
  out += "<SECRET>";
  out += s.substr(d.end, to - d.end);
  return out;
}

std::string redact_expansion_defaults(std::string_view s, int& count) {
  return replace_all(expansion_defaults(), s, [&](const Match& m) -> Decision {
    if (!secret_name(m.group(1))) return {};
    const std::optional<DefaultWord> d = default_word(m.subject, m.begin());
    if (!d || harmless_value(d->literal(m.subject))) return {};
    ++count;
    return {with_secret_default(m.subject, m.begin(), *d, d->expansion_end), 0, d->expansion_end};
  });
}

// A short flag that is a password under one command only, up to its value: `-X` glued to the value
// (group 2 unset) or before blanks (group 2), or smbclient's `--user` before blanks or `=`.
const Pattern& command_password_flags() {
  static const Pattern p("(?<![^ \\t])(-[akKPpuU]|--user)(?:([ \\t]++|=)|(?=[^\\s=]))");
  return p;
}

// redis-cli -a PW, openssl -k PW / -K HEXKEY, zip/unzip -P PW (or -PPW), 7z -pPW (glued: `-p`
// alone prompts), lftp -u USER,PW, smbclient/rpcclient/smbget/smbcacls -U USER%PW (or --user):
// the flag counts only inside that command (CommandLines::Scope::kCommand). PW -> <SECRET> (USER
// -> <USER>) unless none, a placeholder, a reference or an option (`-…`).
std::string redact_command_passwords(std::string_view s, int& count) {
  using Scope = CommandLines::Scope;
  const CommandLines redis(s, {"redis-cli"}, Scope::kCommand);
  const CommandLines openssl(s, {"openssl"}, Scope::kCommand);
  const CommandLines zip(s, {"zip", "unzip"}, Scope::kCommand);
  const CommandLines sevenzip(s, {"7z", "7za", "7zr", "7zz"}, Scope::kCommand);
  const CommandLines lftp(s, {"lftp"}, Scope::kCommand);
  const CommandLines smb(s, {"smbclient", "rpcclient", "smbget", "smbcacls"}, Scope::kCommand);
  static constexpr std::string_view kUserPasswordStop = ";&|()<>'\"`";  // `,` separates lftp's
  return replace_all(command_password_flags(), s, [&](const Match& m) -> Decision {
    const std::string_view flag = m.group(1);
    const bool glued = !m.has(2);
    if (m.group(2) == "=" && flag != "--user") return {};
    const CommandLines* command = &smb;
    bool spaced_ok = true, glued_ok = true;
    char split = 0;  // the byte between USER and PW
    switch (flag == "--user" ? 'U' : flag[1]) {
      case 'a': command = &redis, glued_ok = false; break;
      case 'k':
      case 'K': command = &openssl, glued_ok = false; break;
      case 'P': command = &zip; break;
      case 'p': command = &sevenzip, spaced_ok = false; break;
      case 'u': command = &lftp, split = ','; break;
      default: split = '%', glued_ok = flag != "--user"; break;
    }
    const std::optional<Value> v = read_value(m.subject, m.end(), split != 0 ? kUserPasswordStop : kWordStop);
    if (!v) return {};
    // Kept, whether or not the flag is its command's: a closed quoted value is skipped (what is
    // inside is no flag), after a bare one the search goes on from the flag. So the same values are
    // read where a rule has redacted the command's name (a second pass), and a flag inside one
    // value never reads across its quotes.
    const Decision keep = v->open.empty() || v->unclosed() ? Decision{} : Decision{std::nullopt, v->end};
    if ((glued ? !glued_ok : !spaced_ok) || !command->runs_before(m.begin())) return keep;
    std::string_view password = v->literal;
    size_t at = 0;
    if (split != 0) {
      at = password.find(split);
      if (at == std::string_view::npos) return keep;  // no password: the command asks for it
      password.remove_prefix(at + 1);
    }
    if (password.empty() || password.front() == '<' || password.front() == '-' ||
        (password.front() == '$' && harmless_value(password))) {
      return keep;
    }
    std::string out(m.subject.substr(m.begin(), m.end() - m.begin()));
    out += v->open;
    if (split != 0) {
      if (at > 0) out += "<USER>";
      out += split;
    }
    out += "<SECRET>";
    out += v->close;
    // A bare value goes with what the shell glues to it (`-P ab\"c`, `-pab"c d"`): left, an escape
    // or a quote it held would pair differently on a second pass, and cut the command elsewhere.
    const size_t end = v->open.empty() ? shell_word_end(m.subject, m.end(), v->end) : v->end;
    if (!command->keeps_commands(m.subject, m.begin(), end, out)) return keep;
    ++count;
    return {std::move(out), 0, end};
  });
}

// openssl's pass-phrase arguments that say where the phrase is (openssl-passphrase-options(1)):
// `env:VAR`, `file:PATH`, `fd:N`, `stdin`. Not `pass:PHRASE`.
bool openssl_passphrase_source(std::string_view v) {
  for (std::string_view source : {"env:", "file:", "fd:"}) {
    if (v.size() > source.size() && v.starts_with(source)) return true;
  }
  return v == "stdin";
}

// For a `pass:` match (NAME `pass`, separator `:`) that opens a quoted argument of openssl's
// `-pass`, `-passin` or `-passout` (`-passin "pass:a b c"`): where the phrase ends, at the closing
// quote or the line's end; nullopt otherwise.
std::optional<size_t> openssl_quoted_phrase_end(const Match& m) {
  const std::string_view s = m.subject;
  if (m.group(3) != "pass" || m.group(4) != ":" || !m.group(1).empty() || m.begin() == 0) return std::nullopt;
  const char quote = s[m.begin() - 1];
  if (quote != '"' && quote != '\'') return std::nullopt;
  std::string_view before = s.substr(0, m.begin() - 1);
  while (!before.empty() && (before.back() == ' ' || before.back() == '\t' || before.back() == '=')) {
    before.remove_suffix(1);
  }
  if (!(before.ends_with(" -pass") || before.ends_with(" -passin") || before.ends_with(" -passout"))) {
    return std::nullopt;
  }
  size_t end = m.end();
  while (end < s.size() && s[end] != quote && s[end] != '\n') {
    if (quote == '"' && s[end] == '\\' && end + 1 < s.size() && s[end + 1] != '\n') ++end;
    ++end;
  }
  return std::min(end, s.size());
}

// Whether a literal follows the references `word` starts with, read as the shell reads the word:
// its quotes and `\` dropped (`$X"abc"` and `$X\abc` are X's value then `abc`). As for
// literal_after_references(): not after `$(…)` or an expansion with an operator.
bool quoted_literal_after_references(std::string_view word) {
  size_t i = 0, last = 0;
  for (size_t n; i < word.size() && (n = reference_length(word.substr(i))) > 0;) last = i, i += n;
  if (i == 0 || i == word.size()) return false;
  if (word[last + 1] == '(') return false;
  if (word[last + 1] == '{') {
    size_t k = last + 2;
    while (k < i && (std::isalnum(static_cast<unsigned char>(word[k])) || word[k] == '_')) ++k;
    if (k != i - 1) return false;  // not `${NAME}`
  }
  std::string rest;
  for (size_t k = i; k < word.size(); ++k) {
    if (word[k] == '"' || word[k] == '\'') continue;
    if (word[k] == '\\' && k + 1 < word.size()) ++k;
    rest += word[k];
  }
  return !rest.empty() && std::isalnum(static_cast<unsigned char>(rest[0])) && !harmless_value(rest);
}

std::string redact_assignments(std::string_view s, int& count) {
  return replace_all(assignments(), s, [&](const Match& m) -> Decision {
    Decision keep{std::nullopt, m.end(3)};
    std::string_view dashes = m.group(1), name = m.group(3), sep = m.group(4);
    bool spaced = sep.find_first_of("=:") == std::string_view::npos;
    if (spaced && dashes.empty()) return keep;  // "export NAME" is not NAME=value
    // A docker config.json's credentials sit under JSON keys that are no secret words elsewhere
    // ("auth" is also a scheme's or a switch's name): read only as "KEY": "VALUE".
    const bool docker_key = m.group(2) == "\"" && sep.find(':') != std::string_view::npos &&
                            (name == "auth" || name == "identitytoken" || name == "registrytoken");
    if (!docker_key && !secret_name(name)) return keep;
    const std::optional<Value> v = read_value(m.subject, m.end());
    if (!v || (docker_key && v->open != "\"")) return keep;
    // A fat comma's bare value is code (`token => sub {…}`); a JSON or YAML object or list that
    // starts after the name is no value: its own names are read (`"credentials": {"token": …}`).
    if (v->open.empty() && (sep.find("=>") != std::string_view::npos || v->literal == "{" ||
                            v->literal == "[" || v->literal == "{}")) {
      return v->literal.front() == '{' || v->literal.front() == '[' ? Decision{std::nullopt, v->end} : keep;
    }
    // openssl's pass-phrase argument other than `pass:PHRASE` says where the phrase is.
    if (dashes == "-" && name == "pass" && openssl_passphrase_source(v->literal)) {
      return v->unclosed() ? keep : Decision{std::nullopt, v->end};
    }
    // openssl's `"pass:PHRASE"` in quotes: the phrase runs to the closing quote, blanks and all.
    if (const std::optional<size_t> close = openssl_quoted_phrase_end(m)) {
      if (harmless_value(m.subject.substr(m.end(), *close - m.end()))) return {std::nullopt, std::max(*close, m.end())};
      ++count;
      return {std::string(m.subject.substr(m.begin(), m.end() - m.begin())) + "<SECRET>", 0, *close};
    }
    // NAME=${OTHER:-WORD} (bare or in double quotes): a reference whose default, a literal, is
    // NAME's value while OTHER is unset. (Under a secret OTHER, redact_expansion_defaults() has
    // taken it already.)
    if (const size_t at = m.end() + v->open.size(); v->open.empty() || v->open == "\"") {
      if (const std::optional<DefaultWord> d = default_word(m.subject, at);
          d && !harmless_value(d->literal(m.subject))) {
        ++count;
        // A literal glued after the expansion (`${X:-abc}def`, `"${X:-a b}${Y}def"`): the whole
        // value goes, as a second pass (reading `${X:-<SECRET>}def`) would take it.
        const size_t after = d->expansion_end;
        const size_t limit = v->open.empty() ? bare_word_end(m.subject, after).value_or(after)
                                             : std::max(after, v->end - v->close.size());
        if (after < limit && literal_after_references(m.subject.substr(after, limit - after))) {
          const size_t end = std::max({v->end, limit, after});
          std::string out(m.subject.substr(m.begin(), m.end() - m.begin()));
          out += v->open;
          out += "<SECRET>";
          out += v->close;
          return {std::move(out), 0, end};
        }
        const size_t end = std::max(v->end, d->expansion_end);
        return {with_secret_default(m.subject, m.begin(), *d, end), 0, end};
      }
    }
    if (harmless_value(v->literal)) {
      // A reference the shell glues a literal to (`$X"abc"`, `$X\abc`): the whole word goes.
      // (The word is read to its end only when a letter or digit follows the references, past
      // quotes and `\`: a word with more names in it is then a secret and goes whole, so no
      // stretch of text is read once per name.)
      if (v->open.empty()) {
        size_t refs = 0;
        for (size_t n; refs < v->literal.size() && (n = reference_length(v->literal.substr(refs))) > 0;) refs += n;
        size_t next = m.end() + refs;
        while (next < m.subject.size() && (m.subject[next] == '"' || m.subject[next] == '\'' || m.subject[next] == '\\')) {
          ++next;
        }
        if (refs > 0 && next < m.subject.size() && std::isalnum(static_cast<unsigned char>(m.subject[next]))) {
          const size_t end = shell_word_end(m.subject, m.end(), v->end);
          if (quoted_literal_after_references(m.subject.substr(m.end(), end - m.end()))) {
            ++count;
            return {std::string(m.subject.substr(m.begin(), m.end() - m.begin())) + "<SECRET>", 0, end};
          }
        }
      }
      // Skip the whole value; past an unclosed one only the name, as before such values were read.
      return v->unclosed() ? keep : Decision{std::nullopt, v->end};
    }
    if (v->open.empty() && v->end < m.subject.size() &&
        (m.subject[v->end] == '(' || m.subject[v->end] == '[')) {
      return keep;  // a function call or subscript: code, not a literal
    }
    ++count;
    return secret_value(m.subject, m.begin(), m.end(), *v, true);
  });
}

// Perl and PHP assign with the sigil, which the assignment pattern never reads a name after (in a
// shell `$NAME` is a reference): `my $password = "…";`, `$this->password = '…';`. Up to a quoted
// value, which the caller takes only before a `;`; not `==`, `=~`, `=>`. Group 1: NAME.
const Pattern& sigil_assignments() {
  static const Pattern p(
      "(?:(?<![A-Za-z0-9_$\\\\])\\$|->)([A-Za-z_][A-Za-z0-9_]*+)[ \\t]*+=(?![=~>])[ \\t]*+(?=[\"'])");
  return p;
}

// <NAME attributes>VALUE</NAME> on one line (Maven settings.xml, Ivy, Hadoop configuration): the
// caller takes VALUE under a secret NAME. Group 1: NAME, 2: VALUE (no `<`: the placeholder left
// in it ends a second pass's match). Each `<` reads at most to the next `<` or newline.
const Pattern& xml_elements() {
  static const Pattern p("<([A-Za-z_][A-Za-z0-9_.:-]*+)(?:[ \\t][^<>\\n]*+)?>([^<\\n]++)</\\1>");
  return p;
}

// ---------------------------------------------------------------- rule 6: e-mail

// An address whose local part may hold shell variables (${USER}@site.edu) or a documentation
// placeholder (<NetID>@site.edu). Not after ':' or '/' (URLs with credentials are handled
// above) except right after "mailto:". The local part is taken whole (no '@' can be in it, so
// giving some back never helps) in at most 64 pieces, the domain in at most 127 labels (RFC
// 1035's limit): a repeated group that could run over a whole script exhausted the JIT's stack.
const Pattern& emails() {
  static const Pattern p(
      "(?:(?<=mailto:)|(?<![A-Za-z0-9_.%+/:$}>-]))"
      "((?:[A-Za-z0-9._%+-]++|\\$\\{?[A-Za-z_][A-Za-z0-9_]*+\\}?|<[A-Za-z0-9_ -]{1,40}>){1,64}+)"
      "@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?){0,126}"
      "\\.[A-Za-z]{2,}(?![A-Za-z0-9])");
  return p;
}

// Scheduler notification directives: the value is an address (or a user name) whatever it looks
// like. Slurm --mail-user, PBS/UGE -M, LSF -u, PJM --mail-list, Cobalt --notify. The first such
// option on the line (until 2026-12-06 the last -M or -u: one inside a value that a command's
// password flag later took left a second pass to read an earlier one).
const Pattern& mail_directives() {
  static const Pattern p(
      "^([ \\t]*#(?:SBATCH[ \\t][^\\n]*?--mail-user|PBS(?:[ \\t][^\\n]*?)??[ \\t]-M|"
      "\\$(?:[ \\t][^\\n]*?)??[ \\t]-M|BSUB(?:[ \\t][^\\n]*?)??[ \\t]-u|PJM[ \\t][^\\n]*?--mail-list|"
      "COBALT[ \\t][^\\n]*?--notify)(?:[ \\t]*=[ \\t]*|[ \\t]+))"
      "(<[^>\\n]*>|\"[^\"\\n]*\"|'[^'\\n]*'|[^\\s#]+)",
      PCRE2_MULTILINE);
  return p;
}

// ---------------------------------------------------------------- rule 7: user paths

bool path_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-' ||
         c == '/' || c == '<' || c == '>';  // <USER>/<GROUP> placeholders are path components
}

// True when the match at `pos` (a '/') lies in the first `max_components` components of an
// absolute path: not relative, not after $VAR / ${VAR} / ~, not a URL path.
bool leading_absolute_component(std::string_view s, size_t pos, int max_components) {
  size_t b = pos;
  int components = 0;
  while (b > 0 && path_char(s[b - 1])) {
    // Stop as soon as the path is too deep: scanning a long path back to its start for every
    // match in it was quadratic.
    if (s[--b] == '/' && ++components >= max_components) return false;
  }
  std::string_view prefix = s.substr(b, pos - b);
  if (!prefix.empty() && prefix[0] != '/') return false;  // relative, or $HOME/...
  if (prefix.substr(0, 2) == "//") return false;          // URL authority
  if (b > 0) {
    char before = s[b - 1];
    if (before == '$' || before == '}' || before == '~' || before == ')') return false;
  }
  return true;
}

const Pattern& home_paths() {
  // Group 1/2: the directory word, 3: the user component.
  static const Pattern p(
      "/(?:(home|Users|users|scratch)/|(homes)/(?:[a-z]/)?)(?!\\.{1,2}(?:/|$))"
      "([A-Za-z0-9_.][A-Za-z0-9_.-]*+)");
  return p;
}

const Pattern& work_paths() {
  static const Pattern p(
      "/work/(?!\\.{1,2}(?:/|$))([A-Za-z0-9_.][A-Za-z0-9_.-]*+)"
      "(?:/(?!\\.{1,2}(?:/|$))([A-Za-z0-9_.][A-Za-z0-9_.-]*+))?");
  return p;
}

const Pattern& tilde_users() {
  static const Pattern p("(?<![A-Za-z0-9_$~/.>-])~([A-Za-z_][A-Za-z0-9_.-]*+)");
  return p;
}

std::string redact_paths(std::string_view s, int& count) {
  std::string out = replace_all(home_paths(), s, [&](const Match& m) -> Decision {
    if (!leading_absolute_component(m.subject, m.begin(), 3)) return {};
    ++count;
    std::string dir(m.has(1) ? m.group(1) : m.group(2));
    return {"/" + dir + "/<USER>"};
  });
  out = replace_all(work_paths(), out, [&](const Match& m) -> Decision {
    if (!leading_absolute_component(m.subject, m.begin(), 2)) return {};
    ++count;
    return {m.has(2) ? std::string("/work/<GROUP>/<USER>") : std::string("/work/<GROUP>")};
  });
  out = replace_all(tilde_users(), out, [&](const Match& m) -> Decision {
    // `~HF_TOKEN=…` is a secret's assignment, which the assignment rule has read (and, a value
    // such as `${X}@…` being harmless, skipped whole): as `~<USER>=` a second pass would read
    // the value's inside instead.
    size_t after = m.end();
    while (after < m.subject.size() && (m.subject[after] == ' ' || m.subject[after] == '\t')) ++after;
    if (after < m.subject.size() && (m.subject[after] == '=' || m.subject[after] == ':') && secret_name(m.group(1))) {
      return {};
    }
    ++count;
    return {std::string("~<USER>")};
  });
  return out;
}

}  // namespace

std::string redact_script(std::string_view script, RedactionCounts* counts) {
  RedactionCounts c;
  std::string s = normalize_whitespace(script);
  s = redact_private_keys(s, c.private_keys);
  s = redact_unarmoured_private_keys(s, false, c.private_keys);
  s = redact_unarmoured_private_keys(s, true, c.private_keys);

  s = replace_all(token_shapes(), s, [&](const Match&) -> Decision {
    ++c.tokens;
    return {std::string("<TOKEN>")};
  });
  s = redact_sk_keys(s, c.tokens);
  s = replace_all(auth_headers(), s, [&](const Match& m) -> Decision {
    ++c.tokens;
    return {std::string(m.group(1)) + "<SECRET>"};
  });

  s = replace_all(url_credentials(), s, [&](const Match& m) -> Decision {
    if (m.group(3).front() == '$') return {};
    ++c.secrets;
    return {std::string(m.group(1)) + (m.group(2).empty() ? ":<SECRET>@" : "<USER>:<SECRET>@")};
  });
  s = replace_all(signed_url_params(), s, [&](const Match& m) -> Decision {
    // A value this rule or a later one redacted (a second pass) starts with <SECRET>.
    if (m.group(2).starts_with("<SECRET>") || m.group(2).front() == '$') return {};
    ++c.secrets;
    return {std::string(m.group(1)) + "<SECRET>"};
  });
  const CommandLines curl_lines(s, {"curl"});
  s = replace_all(curl_user(), s, [&](const Match& m) -> Decision {
    if (!curl_lines.runs_before(m.begin())) return {};
    ++c.secrets;
    // In quotes the password runs to the closing quote, blanks and all (to the line's end when
    // the string is not closed on its line). Read byte by byte: what is read is replaced, so the
    // text is read once.
    size_t end = m.end();
    if (const char open = m.group(1).back(); open == '"' || open == '\'') {
      while (end < m.subject.size() && m.subject[end] != open && m.subject[end] != '\n') ++end;
    }
    return {std::string(m.group(1)) + "<USER>:<SECRET>", 0, end};
  });
  s = replace_all(sshpass(), s, [&](const Match& m) -> Decision {
    // Whatever follows -p is the password: kept only when it is none, a placeholder or a
    // reference (a short number or `true` is a password here).
    const std::optional<Value> v = read_value(m.subject, m.end());
    if (!v || v->literal.empty() || v->literal.front() == '<' ||
        (v->literal.front() == '$' && harmless_value(v->literal))) {
      return {};
    }
    ++c.secrets;
    std::string out(m.subject.substr(m.begin(), m.end() - m.begin()));
    out += v->open;
    out += "<SECRET>";
    out += v->close;
    return {std::move(out), 0, v->end};
  });
  // mysql -pSECRET (glued: `-p` alone prompts, and the next word is the database); on a line
  // that logs in to a registry (docker/podman/helm/oras login), -p SECRET and -pSECRET.
  const CommandLines mysql_lines(s, {"mysql", "mysqldump", "mysqladmin", "mysqlimport", "mysqlshow",
                                     "mysqlcheck", "mariadb", "mariadb-dump"});
  const CommandLines login_lines(s, {"login"});
  s = replace_all(short_p_flag(), s, [&](const Match& m) -> Decision {
    const bool glued = m.has(2);
    if (!(glued && mysql_lines.runs_before(m.begin())) && !login_lines.runs_before(m.begin())) return {};
    const size_t begin = glued ? m.begin(2) : m.end();
    std::optional<Value> v;
    if (glued) {  // the pattern has read it: a word, or a quoted string it closes
      v.emplace();
      v->end = m.end(2);
      const std::string_view value = m.group(2);
      const bool quoted = value.size() >= 2 && (value[0] == '"' || value[0] == '\'');
      v->literal = quoted ? value.substr(1, value.size() - 2) : value;
      if (quoted) v->open = v->close = value.substr(0, 1);
    } else {
      v = read_value(m.subject, begin);
    }
    if (!v) return {};
    if (harmless_value(v->literal)) return v->unclosed() ? Decision{} : Decision{std::nullopt, v->end};
    ++c.secrets;
    std::string out(m.subject.substr(m.begin(), begin - m.begin()));
    out += v->open;
    out += "<SECRET>";
    out += v->close;
    return {std::move(out), 0, v->end};
  });
  s = replace_all(wandb_login(), s, [&](const Match& m) -> Decision {
    ++c.secrets;
    return {std::string(m.group(1)) + "<SECRET>"};
  });
  s = redact_expansion_defaults(s, c.secrets);
  s = redact_assignments(s, c.secrets);
  s = replace_all(sigil_assignments(), s, [&](const Match& m) -> Decision {
    if (!secret_name(m.group(1))) return {};
    const std::optional<Value> v = read_value(m.subject, m.end());
    if (!v || harmless_value(v->literal)) return v && !v->unclosed() ? Decision{std::nullopt, v->end} : Decision{};
    // A statement: `;` after the string (in a shell, `[ $TOKEN = "x" ]` or `echo $TOKEN = 'x'` is
    // none, and stays).
    size_t after = v->end;
    while (after < m.subject.size() && (m.subject[after] == ' ' || m.subject[after] == '\t')) ++after;
    if (v->unclosed() || after >= m.subject.size() || m.subject[after] != ';') return {std::nullopt, v->end};
    ++c.secrets;
    std::string out(m.subject.substr(m.begin(), m.end() - m.begin()));
    out += v->open;
    out += "<SECRET>";
    out += v->close;
    return {std::move(out), 0, v->end};
  });
  s = replace_all(xml_elements(), s, [&](const Match& m) -> Decision {
    if (!secret_name(m.group(1)) || harmless_value(m.group(2))) return {};
    ++c.secrets;
    std::string out(m.subject.substr(m.begin(), m.begin(2) - m.begin()));
    out += "<SECRET>";
    out += m.subject.substr(m.end(2), m.end() - m.end(2));
    return {std::move(out)};
  });
  // A secret stored by `aws configure set`, set by csh's `setenv`, or a netrc entry's password:
  // VALUE -> <SECRET>. In a netrc entry a written `\n` (echo -e, printf) ends a bare value. After
  // the assignments: what they redact may be the text these patterns read before the value (a
  // host, an option's value), and a second pass must find it as the first did.
  auto secret_value_after = [&](const Match& m, bool netrc) -> Decision {
    std::optional<Value> v = read_value(m.subject, m.end());
    if (v && netrc && v->open.empty()) {
      if (const size_t nl = v->literal.find("\\n"); nl != std::string_view::npos) {
        v->literal = v->literal.substr(0, nl);
        v->end = m.end() + nl;
      }
    }
    if (!v || harmless_value(v->literal)) return {};
    if (v->literal.starts_with('%')) return {};  // printf's "password %s": the secret is elsewhere
    if (v->literal.starts_with('-')) return {};  // an option: no key or password starts so
    ++c.secrets;
    return secret_value(m.subject, m.begin(), m.end(), *v, !netrc);  // a netrc value is inside a string
  };
  s = replace_all(aws_configure_set(), s, [&](const Match& m) -> Decision {
    // Kept: go on from the next byte, since the NAME read may be another `aws configure set`.
    Decision d = secret_name(m.group(1)) ? secret_value_after(m, false) : Decision{};
    if (!d.replacement) d.resume = m.begin() + 1;
    return d;
  });
  s = replace_all(csh_setenv(), s, [&](const Match& m) -> Decision {
    // Kept: go on from NAME, which may be another `setenv` (`/home/setenv setenv NAME VALUE`).
    Decision d = secret_name(m.group(1)) ? secret_value_after(m, false) : Decision{};
    if (!d.replacement) d.resume = m.begin(1);
    return d;
  });
  s = replace_all(netrc_password(), s, [&](const Match& m) { return secret_value_after(m, true); });

  s = replace_all(emails(), s, [&](const Match& m) -> Decision {
    // git@github.com:org/repo is an SSH login, not a person; s@a.b@c@ is a sed substitution.
    // Only those two forms: git@example.com and s@example.com alone are addresses.
    const char next = m.end() < m.subject.size() ? m.subject[m.end()] : '\0';
    if ((m.group(1) == "git" && next == ':') || (m.group(1) == "s" && next == '@')) return {};
    // a@x.org@y.org leaves "<EMAIL>@y.org": the placeholder does not start a new local part, or a
    // second pass would change the text again.
    if (m.group(1).starts_with("<EMAIL>")) return {};
    ++c.emails;
    return {std::string("<EMAIL>")};
  });
  s = replace_all(mail_directives(), s, [&](const Match& m) -> Decision {
    std::string_view v = m.group(2);
    if (v == "<EMAIL>" || v == "\"<EMAIL>\"" || v == "'<EMAIL>'") return {};
    ++c.emails;
    return {std::string(m.group(1)) + "<EMAIL>"};
  });

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
