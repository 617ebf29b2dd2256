// Untrusted text (a name from an image, a value from a configuration file, a codelet's name) as
// it may be printed to a terminal: every byte outside printable ASCII, and the backslash, as a
// C-style escape, so that no control sequence reaches the user's terminal.
#pragma once

#include <fmt/format.h>

#include <string>
#include <string_view>

namespace ipu {

inline std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char ch : text) {
    const auto byte = static_cast<unsigned char>(ch);
    if (byte == '\\')
      out += "\\\\";
    else if (byte >= 0x20 && byte < 0x7f)
      out += ch;
    else if (byte == '\n')
      out += "\\n";
    else if (byte == '\t')
      out += "\\t";
    else
      out += fmt::format("\\x{:02x}", byte);
  }
  return out;
}

// `text` as one word a POSIX shell reads back unchanged: as it is when it holds only characters
// no shell treats specially, else single-quoted, or ANSI-C quoted ($'...', as bash, zsh and ksh
// read it) when it holds bytes a terminal must not see raw.
inline std::string shell_word(std::string_view text) {
  const auto plain = [](unsigned char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           std::string_view("_./=:+,%@-").find(static_cast<char>(c)) != std::string_view::npos;
  };
  bool all_plain = !text.empty(), all_printable = true;
  for (const char ch : text) {
    const auto byte = static_cast<unsigned char>(ch);
    all_plain = all_plain && plain(byte);
    all_printable = all_printable && byte >= 0x20 && byte < 0x7f;
  }
  if (all_plain) return std::string(text);
  std::string out;
  if (all_printable) {
    out = "'";
    for (const char ch : text) out += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
    return out + "'";
  }
  out = "$'";
  for (const char ch : text) {
    const auto byte = static_cast<unsigned char>(ch);
    if (ch == '\'' || ch == '\\')
      out += std::string("\\") + ch;
    else if (byte >= 0x20 && byte < 0x7f)
      out += ch;
    else
      out += fmt::format("\\x{:02x}", byte);
  }
  return out + "'";
}

}  // namespace ipu
