#!/bin/bash
# The editor under Xvfb with a personal library: a bare form label gets the user's address.
source "$(dirname "$0")/xvfb_common.sh"
editor_with 97 xvfb-form-label paper
xdotool type --delay 50 "Hi Oskar,"
xdotool key Return Return
xdotool type --delay 50 "Thanks for the order confirmation."
xdotool key Return Return
xdotool type --delay 50 "Billing address:"
sleep 6
import -window root docs/img/form-label-xvfb.png
xvfb_stop
