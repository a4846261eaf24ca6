// Internals of script redaction (include/peakcast/ingest/redact.h), shared by its .cpp files; not
// part of the public contract. One file per group of rules (numbers as in docs/redaction.md),
// in the order redact_script() runs them:
//   redact.cpp              rule 1, whitespace; the order of all the rules
//   redact_keys.cpp         rules 2-4: private-key blocks, token shapes, authorization headers
//   redact_credentials.cpp  rule 5: URL and curl credentials, sshpass, -p flags, wandb login, and
//                           the password flags read only inside their command (these run last)
//   redact_assignments.cpp  rule 6: secret-named assignments and flags (shell, JSON/YAML, Perl,
//                           PHP, XML), ${NAME:-WORD}, aws configure set, setenv, netrc entries
//   redact_users.cpp        rules 7-9: e-mail addresses, scheduler mail directives, user paths
//   redact_scan.cpp         what the rules share (declared here): the PCRE2 wrapper, values as the
//                           shell writes them, secret names and harmless values
// Patterns are PCRE2 (8-bit, byte mode, JIT when available), compiled once in function-local
// statics (thread-safe initialization); compiled code is read-only and shared, match data is
// per call.
#pragma once

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace peakcast::ingest::redact_detail {

// ---------------------------------------------------------------- PCRE2 wrapper

class Pattern {
 public:
  explicit Pattern(const char* regex, uint32_t options = 0);
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

// pcre2_match() of `p` on `s` from `offset`, with a per-thread JIT stack larger than PCRE2's
// default; a match that still runs out of it is run again by the interpreter.
int match(const Pattern& p, std::string_view s, size_t offset, uint32_t options, pcre2_match_data* md);

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

// ---------------------------------------------------------------- values

// The bare word at `pos`: not starting with = or :, ending at white space or one of `stop`
// (by default ;&|()<>'"`,]); nullopt when none starts there.
inline constexpr std::string_view kWordStop = ";&|()<>'\"`,]";
std::optional<size_t> bare_word_end(std::string_view s, size_t pos, std::string_view stop = kWordStop);

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
std::optional<Value> read_value(std::string_view s, size_t pos, std::string_view stop = kWordStop);

// Where the shell word ends whose bare first part, read by read_value() from `start`, ends at
// `end`: glued to it, a `\`-escaped byte (not a newline), a quoted string closed on its line that
// does not start with a blank, and more bare bytes; up to white space or one of ;&|()<>`,] (as
// for a bare word). A quote that is not closed on its line, or opens a blank, is taken to close a
// string the assignment stands in (`echo "export TOKEN=abc" >> f`) and ends the word.
size_t shell_word_end(std::string_view s, size_t start, size_t end);

// ---------------------------------------------------------------- secret names, harmless values

// Whether a variable, flag or key name names a secret (docs/redaction.md, rule 6): split into
// lower-case words at non-alphanumerics and camelCase humps, then matched against the secret words.
bool secret_name(std::string_view name);

// Values that cannot be a literal secret: references ($VAR, ${VAR}, $(cmd); `$'…'` and `$"…"`
// are quoted literals, not references), placeholders (<...>), booleans, short numbers.
bool harmless_value(std::string_view v);

// The length of the reference at the start of `v`: `$NAME`, `$1`, `$@` (one special byte),
// `${…}` or `$(…)` to its matching close; 0 when none starts there or it is not closed in `v`.
size_t reference_length(std::string_view v);

// A value that starts with references: harmless unless a literal is glued to them (`${X}literal`,
// `$1abc`: a letter or digit right after the last). A path under them (`$HOME/.token`),
// punctuation (`${A}:${B}`, `${NAME}_x`, `$DIR.key`), a blank, or a short number stays harmless.
// Whether, after the references `t` starts with (none or more), a literal follows glued. Not after
// an expansion with an operator (`${X:-a b}`) or a command substitution: those may hold blanks, so
// a bare value read before a rule redacted inside them stopped in them, and one read after did
// not (a second pass would then differ).
bool literal_after_references(std::string_view t);

// ---------------------------------------------------------------- the rule groups

// Each adds the replacements it makes to `count`; in redact_script()'s order.
std::string redact_private_key_blocks(std::string s, int& count);  // rule 2 (redact_keys.cpp)
std::string redact_tokens(std::string s, int& count);  // rules 3 and 4 (redact_keys.cpp)
std::string redact_credentials(std::string s, int& count);  // rule 5 (redact_credentials.cpp)
std::string redact_secret_assignments(std::string s, int& count);  // rule 6 (redact_assignments.cpp)
std::string redact_emails(std::string s, int& count);  // rules 7 and 8 (redact_users.cpp)
std::string redact_paths(std::string_view s, int& count);  // rule 9 (redact_users.cpp)
// Rule 5's password flags read only inside their command (redact_credentials.cpp); run last.
std::string redact_command_passwords(std::string_view s, int& count);

}  // namespace peakcast::ingest::redact_detail
