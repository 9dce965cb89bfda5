#!/bin/bash
# Start the editor twice on one data folder under Xvfb: the second start says Chunkwise is already
# open and opens no window; after the first is killed (its lock left behind), a start opens again.
set -x
source "$(dirname "$0")/xvfb_common.sh"
editor_with 95 xvfb-session-only ""
xdotool type --delay 60 "Hi Oskar, the first window."
sleep 2
.venv/bin/python main.py > $T/second.log 2>&1 &
SECOND=$!
sleep 8
import -window root docs/img/second-editor-xvfb.png
xdotool search --name "Chunkwise" | wc -l          # windows named Chunkwise: the editor and the message
xdotool key Return                                  # OK: the second process ends
sleep 2
kill -0 $SECOND 2>/dev/null && echo "second still running" || echo "second ended: $(wait $SECOND; echo rc $?)"
kill -9 $APP                                        # the first dies without letting go of its lock
sleep 1
ls $XDG_DATA_HOME/Chunkwise/
app_start 30
window_focus
import -window root docs/img/second-editor-after-kill-xvfb.png
xvfb_stop
