// Redaction rule 5 (docs/redaction.md): credentials in URLs and on command lines (curl -u,
// sshpass -p, mysql and registry logins, wandb login), and the password flags that are one only
// inside their command (redis-cli -a, openssl -k, zip -P, 7z -p, lftp -u, smbclient -U), which
// run after every other rule.
#include <algorithm>
#include <cctype>
#include <initializer_list>
#include <string>
#include <vector>

#include "ingest/redact_internal.h"

namespace peakcast::ingest::redact_detail {
namespace {

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

// A short flag that is a password under one command only, up to its value: `-X` glued to the value
// (group 2 unset) or before blanks (group 2), or smbclient's `--user` before blanks or `=`.
const Pattern& command_password_flags() {
  static const Pattern p("(?<![^ \\t])(-[akKPpuU]|--user)(?:([ \\t]++|=)|(?=[^\\s=]))");
  return p;
}

}  // namespace

std::string redact_credentials(std::string s, int& count) {
  s = replace_all(url_credentials(), s, [&](const Match& m) -> Decision {
    if (m.group(3).front() == '$') return {};
    ++count;
    return {std::string(m.group(1)) + (m.group(2).empty() ? ":<SECRET>@" : "<USER>:<SECRET>@")};
  });
  s = replace_all(signed_url_params(), s, [&](const Match& m) -> Decision {
    // A value this rule or a later one redacted (a second pass) starts with <SECRET>.
    if (m.group(2).starts_with("<SECRET>") || m.group(2).front() == '$') return {};
    ++count;
    return {std::string(m.group(1)) + "<SECRET>"};
  });
  const CommandLines curl_lines(s, {"curl"});
  s = replace_all(curl_user(), s, [&](const Match& m) -> Decision {
    if (!curl_lines.runs_before(m.begin())) return {};
    ++count;
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
    ++count;
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
    ++count;
    std::string out(m.subject.substr(m.begin(), begin - m.begin()));
    out += v->open;
    out += "<SECRET>";
    out += v->close;
    return {std::move(out), 0, v->end};
  });
  s = replace_all(wandb_login(), s, [&](const Match& m) -> Decision {
    ++count;
    return {std::string(m.group(1)) + "<SECRET>"};
  });
  return s;
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

}  // namespace peakcast::ingest::redact_detail
