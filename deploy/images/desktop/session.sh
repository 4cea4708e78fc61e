#!/bin/sh
# The desktop session: Xvfb on :0 (no TCP), then openbox. PID 1 is docker-init; this script stays
# in the foreground so the container lives as long as the X server.
set -eu
size="${TROUPE_SCREEN:-1280x800}"
mkdir -p "$HOME/.config" "$HOME/Desktop"
# -fbdir: the framebuffer is also an XWD file in /tmp (a tmpfs), which the agent reads for
# screenshots without a round trip through the X server.
Xvfb :0 -screen 0 "${size}x24" -fbdir /tmp -nolisten tcp -ac +extension XTEST >/tmp/xvfb.log 2>&1 &
xvfb=$!
# Xvfb creates its abstract socket before it accepts clients; poll the display briefly.
i=0
until xdpyinfo >/dev/null 2>&1; do
  i=$((i + 1))
  if [ "$i" -gt 200 ] || ! kill -0 "$xvfb" 2>/dev/null; then
    echo "session: Xvfb did not start" >&2
    cat /tmp/xvfb.log >&2
    exit 1
  fi
  sleep 0.05
done
openbox >/tmp/openbox.log 2>&1 &
wait "$xvfb"
