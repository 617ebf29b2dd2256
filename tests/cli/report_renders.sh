#!/usr/bin/env bash
# report_renders.sh REPORT.html CELLS SCREENSHOT.png: opens the run report (ipu-sim run --report,
# the SDK's --report) in Debian's headless Chromium and fails unless its scripts ran without an
# error, it says it rendered, its memory and tile-energy heatmaps hold CELLS cells each (the
# tiles of the exchange columns that hold a loaded tile) and its BSP timeline zooms; then saves a
# screenshot of it. The page is opened from a file, with the network
# unreachable, as a user would open it offline.
set -u
report=$1 cells=$2 screenshot=$3
chromium=$(command -v chromium || command -v chromium-browser) || { echo "chromium is not installed (scripts/setup.sh installs it)"; exit 1; }
[[ -s $report ]] || { echo "$report is missing or empty"; exit 1; }
url="file://$(realpath "$report")"
# Root in a container: no sandbox; no GPU; /dev/shm may be small. A proxy that does not exist
# makes any network request fail rather than leave the machine.
flags=(--headless --no-sandbox --disable-gpu --disable-dev-shm-usage --hide-scrollbars
       --proxy-server=127.0.0.1:9 --user-data-dir="$(mktemp -d)")
dom=$(timeout 180 "$chromium" "${flags[@]}" --dump-dom "$url" 2>/dev/null) || { echo "chromium failed on $report"; exit 1; }
root=$(grep -m1 -o '<html[^>]*>' <<< "$dom")
[[ $root == *'data-rendered="yes"'* ]] || { echo "the page did not finish rendering: $root"; exit 1; }
[[ $root != *data-errors* ]] || { echo "script errors: $root"; exit 1; }
[[ $root == *"data-heatmap-cells=\"$cells\""* ]] || { echo "expected $cells heatmap cells: $root"; exit 1; }
[[ $root == *"data-energy-cells=\"$cells\""* ]] || { echo "expected $cells tile-energy cells: $root"; exit 1; }
[[ $root == *'data-zoomable-timelines="1"'* ]] || { echo "the BSP timeline does not zoom: $root"; exit 1; }
rm -f "$screenshot"
timeout 180 "$chromium" "${flags[@]}" --window-size=1300,2400 --screenshot="$screenshot" "$url" >/dev/null 2>&1
[[ -s $screenshot ]] || { echo "no screenshot written to $screenshot"; exit 1; }
echo "$report renders: $cells cells in each heatmap, no script errors; screenshot $screenshot"
