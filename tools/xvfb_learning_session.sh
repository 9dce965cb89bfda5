#!/bin/bash
# Drive the real editor under Xvfb as a user would: type a phone number by hand, turn a chunk down, open the learned list.
set -x
export DISPLAY=:99
Xvfb :99 -screen 0 1200x800x24 >/dev/null 2>&1 &
XPID=$!
sleep 2
T=$(mktemp -d)
export CHUNKWISE_DB=$T/chunks.db CHUNKWISE_CONFIG=$T/settings.json CHUNKWISE_PASSPHRASE=xvfb-session-only XDG_DATA_HOME=$T/data
cd "$(dirname "$0")/.."
.venv/bin/python - <<'PY'
import os
from core import ChunkStore
with ChunkStore(os.environ["CHUNKWISE_DB"]) as s:
    s.add_chunk("+44 20 7946 0321", "pii", ["My phone number is", "You can call me on"], label="phone")
    s.add_chunk("mara@nordhavn.co.uk", "pii", ["My email is", "Email me at"], label="email")
PY
.venv/bin/python main.py > $T/app.log 2>&1 &
APP=$!
sleep 25
WID=$(xdotool search --name "Chunkwise" | head -1)
xdotool windowactivate --sync $WID; xdotool windowfocus $WID
# click into the body
xdotool mousemove 500 400 click 1
xdotool type --delay 60 "Hi Oskar,"
xdotool key Return Return
xdotool type --delay 60 "For anything urgent, ring me direct on +44 20 7946 0321 and I will come down."
sleep 3
xdotool key Return Return
xdotool type --delay 60 "For anything else, you can also email me at"
sleep 4
import -window root docs/img/editor-xvfb-learning.png
xdotool key Escape
sleep 2
xdotool key alt+t
sleep 1
xdotool key n
sleep 3
import -window root docs/img/learned-xvfb.png
xdotool key Escape
sleep 1
kill $APP; sleep 1; kill $XPID
cat $T/app.log | tail -5
