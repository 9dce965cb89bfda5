#!/bin/bash
# The real window under Xvfb: File menu, and a misspelling with its context menu (docs/img/*-xvfb.png).
source "$(dirname "$0")/xvfb_common.sh"
xvfb_start 97
export HOME=$T PYTHON_KEYRING_BACKEND=keyring.backends.fail.Keyring CHUNKWISE_PASSPHRASE=xvfb-session-only
app_start 8
window_focus
xdotool type --delay 50 "Hi Sam, I will recieve the parcel tomorow."
sleep 4
xdotool key Escape
sleep 1
WX=$(xdotool getwindowgeometry $WID | awk '/Position/{print $2}' | cut -d, -f1)
WY=$(xdotool getwindowgeometry $WID | awk '/Position/{print $2}' | cut -d, -f2)
xdotool mousemove $((WX+20)) $((WY+10)) click 1
sleep 1
import -window root docs/img/file-menu-xvfb.png
xdotool key Escape
sleep 1
xdotool mousemove $((WX+215)) $((WY+105)) click 3
sleep 1
import -window root docs/img/spelling-xvfb.png
xdotool key Escape
xvfb_stop
