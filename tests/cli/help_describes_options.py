"""Checks that a program's --help says what each of its options does (issue 38 item 13).

Usage: help_describes_options.py PROGRAM

Boost.Program_options lists an option as "  --name arg (=default)   what it does", its text
wrapped onto indented lines, or starting on the next line when the name is long. An option
with no text on its line and none on the next is undescribed.
"""
import re
import subprocess
import sys

OPTION = re.compile(r"^  (-\w \[ )?--[\w.-]+( \])?( arg)?( \(=[^)]*\))?(?P<text>.*)$")


def undescribed(lines):
    names = []
    for i, line in enumerate(lines):
        match = OPTION.match(line)
        if not match or match.group("text").strip():
            continue
        following = lines[i + 1] if i + 1 < len(lines) else ""
        if not following.strip() or OPTION.match(following):
            names.append(line.split()[0] if line.split()[0].startswith("--") else line.strip())
    return names


def main():
    help_text = subprocess.run([sys.argv[1], "--help"], capture_output=True, text=True,
                               check=True).stdout
    lines = help_text.splitlines()
    options = sum(1 for line in lines if OPTION.match(line))
    missing = undescribed(lines)
    if options == 0:
        sys.exit(f"{sys.argv[1]} --help lists no options:\n{help_text}")
    if missing:
        sys.exit(f"{sys.argv[1]} --help does not say what these do: {', '.join(missing)}")
    print(f"PASS: {options} options, each described")


if __name__ == "__main__":
    main()
