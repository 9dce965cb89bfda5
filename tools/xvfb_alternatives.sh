#!/bin/bash
# The real window under Xvfb: a suggestion, then Alt+] for the next one (docs/img/alternatives-xvfb.png).
source "$(dirname "$0")/xvfb_common.sh"
xvfb_start 96
export HOME=$T PYTHON_KEYRING_BACKEND=keyring.backends.fail.Keyring CHUNKWISE_PASSPHRASE=xvfb-session-only
app_start 8
window_focus
xdotool type --delay 50 "Hi Sam, thanks for the draft. I will"
sleep 6
import -window root docs/img/alternatives-first-xvfb.png
xdotool key alt+bracketright
sleep 1
import -window root docs/img/alternatives-xvfb.png
xvfb_stop
