#!/bin/sh
# run.sh SOURCE_DIR BUILD_DIR: installs the build into a temporary prefix, then configures,
# builds and runs a host program (host_app/) and tile firmware (firmware/) against it, each
# copied outside the source tree first (issue 14). Also checks no installed text file, and
# nothing the library uses to find its files, refers to the checkout or its build tree.
set -eu
src=$(readlink -f "$1") build=$(readlink -f "$2")
work=$(mktemp -d "${TMPDIR:-/tmp}/ipu-install-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
generator=${CMAKE_GENERATOR:-Unix Makefiles}

cmake --install "$build" --prefix "$prefix" > "$work/install.log"
if grep -rIl -e "$src" -e "$build" "$prefix"; then
  echo "FAIL: the installed files above refer to the checkout"; exit 1
fi
if strings "$prefix/lib/libvirtual_ipu_sdk.so" | grep -e "$src/firmware" -e "$build/share"; then
  echo "FAIL: the library refers to the checkout's firmware files"; exit 1
fi
# The public headers compile alone: no SystemC, no generated RTL headers.
printf '#include <sdk/runtime/device.h>\n#include <sdk/compiler/compiler.h>\nint main() {}\n' \
  > "$work/headers.cpp"
c++ -std=c++17 -fsyntax-only -I"$prefix/include/virtual-ipu" "$work/headers.cpp"

for project in host_app firmware; do
  cp -r "$src/tests/install/$project" "$work/$project"
  cmake -S "$work/$project" -B "$work/$project/build" -G "$generator" \
    -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release > "$work/$project.log" ||
    { cat "$work/$project.log"; exit 1; }
  cmake --build "$work/$project/build" >> "$work/$project.log" 2>&1 ||
    { cat "$work/$project.log"; exit 1; }
done

# The host program: an ordinary main(), the installed library's firmware files.
(cd "$work" && env -u IPU_SDK_DATA_DIR "$work/host_app/build/saxpy_app")

# The firmware, built by the package's ipu_add_tile_firmware() and by hand with ipu-cc.
status=0
"$prefix/bin/ipu-sim" run-elf "$work/firmware/build/hello.elf" > "$work/hello.txt" || status=$?
cat "$work/hello.txt"
[ $status -eq 7 ] || { echo "FAIL: hello.elf exited with $status, not 7"; exit 1; }
grep -q "hello from tile 0 of 1$" "$work/hello.txt"
# The same firmware on 4 tiles, replicated by the package's ipu_add_spmd_image().
status=0
"$prefix/bin/ipu-sim" run "$work/firmware/build/hello_4.elf" --chip.tiles 4 > "$work/hello_4.txt" || status=$?
[ $status -eq 7 ] || { echo "FAIL: hello_4.elf exited with $status, not 7"; cat "$work/hello_4.txt"; exit 1; }
grep -q "hello from tile 3 of 4$" "$work/hello_4.txt" || { echo "FAIL: no tile 3 in hello_4.elf's run"; exit 1; }
"$prefix/bin/ipu-cc" "$work/firmware/hello.c" -o "$work/by_hand.elf"
status=0
"$prefix/bin/ipu-sim" run-elf "$work/by_hand.elf" | grep -q "hello from tile 0" || status=$?
"$prefix/bin/ipu-sim" run-elf "$work/by_hand.elf" > /dev/null || status=$?
[ $status -eq 7 ] || { echo "FAIL: ipu-cc's hello exited with $status, not 7"; exit 1; }
# The Python package, imported by a plain python3 with nothing but the prefix's site-packages
# on its path, runs the firmware built above.
site=$(echo "$prefix"/lib/python3*/site-packages)
if [ -d "$site/virtual_ipu" ]; then
  (cd "$work" && env -i PATH=/usr/bin:/bin PYTHONPATH="$site" /usr/bin/python3 -c "
import virtual_ipu as v
assert v.__file__.startswith('$site/'), v.__file__  # the installed one, not the build tree's
r = v.Machine(**{'chip.tiles': 1}).run('$work/by_hand.elf')
assert r.exit_status == 7 and 'hello from tile 0' in r.console, r
print('installed Python package ok:', r)")
fi
echo "installed SDK ok: host program and firmware built outside the tree"
