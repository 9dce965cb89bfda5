#!/bin/bash
# The editor under Xvfb with a personal library: a bare form label gets the user's address.
source "$(dirname "$0")/xvfb_common.sh"
xvfb_start 97
export PYTHON_KEYRING_BACKEND=keyring.backends.fail.Keyring
export CHUNKWISE_PASSPHRASE=xvfb-form-label
seed_paper_profile
app_start 40
window_focus
xdotool type --delay 50 "Hi Oskar,"
xdotool key Return Return
xdotool type --delay 50 "Thanks for the order confirmation."
xdotool key Return Return
xdotool type --delay 50 "Billing address:"
sleep 6
import -window root docs/img/form-label-xvfb.png
xvfb_stop
