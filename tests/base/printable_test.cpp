// printable() and shell_word() (base/printable.h): untrusted names on a terminal and in a command
// meant to be pasted. Each shell word is read back by a real shell (bash, through execvp: no
// shell between the test and it) and must come back byte for byte.
#include "base/printable.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

namespace {

// What bash makes of `word` as one argument of printf %s.
std::string bash_reads(const std::string& word) {
  int out[2];
  EXPECT_EQ(pipe(out), 0);
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(out[1], STDOUT_FILENO);
    close(out[0]);
    const std::string script = "printf %s " + word;
    execlp("bash", "bash", "-c", script.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(out[1]);
  std::string text;
  char buffer[256];
  for (ssize_t n; (n = read(out[0], buffer, sizeof buffer)) > 0;) text.append(buffer, n);
  close(out[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << word;
  return text;
}

TEST(Printable, EscapesEveryByteATerminalMustNotSeeRaw) {
  EXPECT_EQ(ipu::printable("plain name_1"), "plain name_1");
  EXPECT_EQ(ipu::printable("red\x1b[31m"), "red\\x1b[31m");
  EXPECT_EQ(ipu::printable("a\nb\tc\\d"), "a\\nb\\tc\\\\d");
  EXPECT_EQ(ipu::printable(std::string("\0\x7f\xff", 3)), "\\x00\\x7f\\xff");
}

TEST(ShellWord, PlainWordsStayAsTheyAre) {
  EXPECT_EQ(ipu::shell_word("build/tests/axpy.elf"), "build/tests/axpy.elf");
  EXPECT_EQ(ipu::shell_word("x_in="), "x_in=");
  EXPECT_EQ(ipu::shell_word("a b"), "'a b'");
  EXPECT_EQ(ipu::shell_word(""), "''");
}

TEST(ShellWord, EveryWordReadsBackUnchangedAndRunsNothing) {
  char dir[] = "/tmp/ipu-shell-word-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string marker = std::string(dir) + "/ran";
  const std::vector<std::string> words = {
      "plain",
      "a b",
      "it's",
      "x;touch " + marker,
      "$(touch " + marker + ")",
      "`touch " + marker + "`",
      "\"quoted\" $HOME ~ * ? [a] {b,c} | & > < ( ) !",
      "back\\slash",
      "new\nline",
      "esc\x1b[31mape",
      std::string("bytes\x01\x7f\xc3\xa9", 9),
      "'",
      "\\",
  };
  for (const std::string& word : words) {
    const std::string quoted = ipu::shell_word(word);
    for (const char c : quoted)
      EXPECT_TRUE(c >= 0x20 && c < 0x7f) << "a raw control byte in " << ipu::printable(quoted);
    EXPECT_EQ(bash_reads(quoted), word) << ipu::printable(quoted);
  }
  EXPECT_NE(access(marker.c_str(), F_OK), 0) << "a quoted word ran a command";
  rmdir(dir);
}

}  // namespace
