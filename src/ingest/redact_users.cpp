// Redaction rules 7-9 (docs/redaction.md): what names a person. E-mail addresses, scheduler mail
// directives, and the user and group components of paths (/home/<user>, /work/<group>/<user>,
// ~user).
#include <cctype>
#include <string>

#include "ingest/redact_internal.h"

namespace peakcast::ingest::redact_detail {
namespace {

// ---------------------------------------------------------------- rule 7: e-mail

// An address whose local part may hold shell variables (${USER}@site.edu) or a documentation
// placeholder (<NetID>@site.edu). Not after ':' or '/' (URLs with credentials are rule 5's,
// redact_credentials.cpp) except right after "mailto:". The local part is taken whole (no '@' can be in it, so
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

// ---------------------------------------------------------------- rule 8: mail directives

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

// ---------------------------------------------------------------- rule 9: user paths

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

}  // namespace

std::string redact_emails(std::string s, int& count) {
  s = replace_all(emails(), s, [&](const Match& m) -> Decision {
    // git@github.com:org/repo is an SSH login, not a person; s@a.b@c@ is a sed substitution.
    // Only those two forms: git@example.com and s@example.com alone are addresses.
    const char next = m.end() < m.subject.size() ? m.subject[m.end()] : '\0';
    if ((m.group(1) == "git" && next == ':') || (m.group(1) == "s" && next == '@')) return {};
    // a@x.org@y.org leaves "<EMAIL>@y.org": the placeholder does not start a new local part, or a
    // second pass would change the text again.
    if (m.group(1).starts_with("<EMAIL>")) return {};
    ++count;
    return {std::string("<EMAIL>")};
  });
  s = replace_all(mail_directives(), s, [&](const Match& m) -> Decision {
    std::string_view v = m.group(2);
    if (v == "<EMAIL>" || v == "\"<EMAIL>\"" || v == "'<EMAIL>'") return {};
    ++count;
    return {std::string(m.group(1)) + "<EMAIL>"};
  });
  return s;
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

}  // namespace peakcast::ingest::redact_detail
