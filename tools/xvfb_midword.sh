#!/bin/bash
# The editor under Xvfb, a pause inside a word: after "Could you ple" the ghost text is the rest of
# "please" (token healing, core/healing.py), and Tab writes the word once
# (docs/img/midword-{pause,taken}-xvfb.png).
source "$(dirname "$0")/xvfb_common.sh"
xvfb_start 93
export HOME=$T PYTHON_KEYRING_BACKEND=keyring.backends.fail.Keyring CHUNKWISE_PASSPHRASE=xvfb-session-only
seed_persona mara
app_start 40
window_focus
xdotool type --delay 50 "Hi Oskar,"
xdotool key Return Return
xdotool type --delay 50 "Thanks for the upd"
sleep 6
import -window root docs/img/midword-pause-xvfb.png
xdotool key Tab
sleep 1
xdotool type --delay 50 " Could you ple"
sleep 6
import -window root docs/img/midword-taken-xvfb.png
xvfb_stop
