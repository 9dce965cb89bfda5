#!/bin/bash
# The editor under Xvfb with an empty library: after "...please ring me directly at" the model would make up a
# phone number, so the suggestion stops before it and the status bar says why (Stats.withheld).
source "$(dirname "$0")/xvfb_common.sh"
xvfb_start 95
export PYTHON_KEYRING_BACKEND=keyring.backends.fail.Keyring
export CHUNKWISE_PASSPHRASE=xvfb-withheld
app_start 40
window_focus
xdotool type --delay 50 "Hi Sam,"
xdotool key Return Return
xdotool type --delay 50 "If anything comes up during the interview, please ring me directly at"
sleep 8
import -window root docs/img/withheld-xvfb.png
xvfb_stop
