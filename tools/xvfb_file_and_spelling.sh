#!/bin/bash
# The real window under Xvfb: File menu, and a misspelling with its context menu (docs/img/*-xvfb.png).
export DISPLAY=:97
Xvfb :97 -screen 0 1200x800x24 >/dev/null 2>&1 &
XPID=$!
sleep 2
T=$(mktemp -d)
export CHUNKWISE_DB=$T/chunks.db CHUNKWISE_CONFIG=$T/settings.json XDG_DATA_HOME=$T/data HOME=$T
export PYTHON_KEYRING_BACKEND=keyring.backends.fail.Keyring CHUNKWISE_PASSPHRASE=xvfb-session-only
cd "$(dirname "$0")/.."
.venv/bin/python main.py > $T/app.log 2>&1 &
APP=$!
sleep 8
WID=$(xdotool search --name "Chunkwise" | head -1)
xdotool windowactivate --sync $WID; xdotool windowfocus $WID
xdotool mousemove 500 400 click 1
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
kill $APP; sleep 1; kill $XPID
cat $T/app.log | tail -5
