#!/bin/bash
# The editor under Xvfb with Teo's day-one library but no name in it: after "Cheers," and Enter the model
# would sign with a name it made up ("Liam", "Alex"), so the suggestion stops before that line and the
# status bar says why (Decoder.own_line_ahead, Stats.withheld "name").
source "$(dirname "$0")/xvfb_common.sh"
xvfb_start 96
export PYTHON_KEYRING_BACKEND=keyring.backends.fail.Keyring
export CHUNKWISE_PASSPHRASE=xvfb-made-up-name
.venv/bin/python - <<'PY'
import json, os
from chunkwise.core import ChunkStore
profile = json.load(open("bench/data/personas/profiles.json"))["teo"]
with ChunkStore(os.environ["CHUNKWISE_DB"]) as s:
    for field, entry in profile.items():
        if field != "name":                      # a user who has not added their name yet
            s.add_chunk(entry["value"], "pii", entry["contexts"], label=field.replace("_", " "))
PY
app_start 40
window_focus
xdotool type --delay 50 "Hi Nina,"
xdotool key Return Return
xdotool type --delay 50 "The new page is live. Let me know what you think!"
xdotool key Return Return
xdotool type --delay 50 "Cheers,"
xdotool key Return
sleep 8
import -window root docs/img/made-up-name-xvfb.png
xvfb_stop
