#!/bin/bash
# The editor under Xvfb with the paper's profile: a draft whose first line is the bare label "Phone:"
# gets the user's phone number (before the classifier learned first lines it read ordinary text there).
source "$(dirname "$0")/xvfb_common.sh"
xvfb_start 96
export PYTHON_KEYRING_BACKEND=keyring.backends.fail.Keyring
export CHUNKWISE_PASSPHRASE=xvfb-first-line
seed_paper_profile
app_start 40
window_focus
xdotool type --delay 50 "Phone:"
sleep 6
import -window root docs/img/first-line-xvfb.png
xvfb_stop
