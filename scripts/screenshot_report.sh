#!/bin/sh
# Render a kmicro HTML report headless and save a screenshot, to check it by eye.
#   scripts/screenshot_report.sh report.html [out.png] [height]
# Needs Debian's chromium (apt-get install -y chromium). No network is used: the report
# is self-contained, and the flags below stop chromium's own background requests.
set -eu
html=$(realpath "$1")
out=${2:-${html%.html}.png}
height=${3:-4000}
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
chromium --headless --no-sandbox --disable-gpu --disable-background-networking \
  --disable-component-update --disable-sync --no-first-run --hide-scrollbars \
  --user-data-dir="$profile" --screenshot="$out" --window-size="1400,$height" \
  "file://$html" 2>/dev/null
echo "$out"
