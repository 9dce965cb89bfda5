#!/bin/bash
# Start the editor twice on one data folder under Xvfb.  The first window is covered by another
# program's window; the second start brings the open editor to the front (its status bar says why)
# and ends, opening no window and no message.  After the first is killed (its lock and socket left
# behind), a start opens an editor again, with the email in progress restored.
set -x
source "$(dirname "$0")/xvfb_common.sh"
editor_with 95 xvfb-session-only ""
xdotool type --delay 60 "Hi Oskar, the first window."
sleep 2
xmessage -geometry 1200x800+0+0 "Another program's window, over the editor" &
COVER=$!
sleep 2
import -window root docs/img/second-editor-covered-xvfb.png
.venv/bin/python main.py > $T/second.log 2>&1 &
SECOND=$!
sleep 8
import -window root docs/img/second-editor-xvfb.png
kill -0 $SECOND 2>/dev/null && echo "second still running" || echo "second ended: $(wait $SECOND; echo rc $?)"
xdotool search --name "Chunkwise" | wc -l          # windows named Chunkwise: the editor alone
kill $COVER
kill -9 $APP                                        # the first dies without letting go of its lock
sleep 1
ls $XDG_DATA_HOME/Chunkwise/
app_start 30
window_focus
import -window root docs/img/second-editor-after-kill-xvfb.png
xvfb_stop
